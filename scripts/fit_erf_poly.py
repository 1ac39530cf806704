"""The coefficients of wick::math::erff_poly (src/backend/math.h): minimax fits in double.

    |x| < 0.921875:      erf(x) = x + x * P(x^2),   P of degree 5
    0.921875 <= |x| < 4: erf(x) = 1 - exp(-x^2) * G(1 / (1 + |x| / 2)),   G of degree 6

P minimizes the absolute error of erf(x)/x - 1, G the relative error of erfc(a) exp(a^2);
both by Lawson's iteratively reweighted least squares on Chebyshev nodes. Prints the
maximum errors and the coefficients, lowest degree first (math.h evaluates them by Horner
from the highest). Usage: python3 scripts/fit_erf_poly.py (needs numpy).
"""
import math

import numpy as np

SPLIT = 0.921875
TOP = 4.0


def chebyshev_nodes(lo, hi, n=40001):
    return np.cos(np.linspace(0, np.pi, n)) * (hi - lo) / 2 + (hi + lo) / 2


def minimax(x, target, degree, scale, iterations=100):
    """Coefficients c (lowest first) minimizing max |sum c_k x^k - target| / scale."""
    basis = np.stack([x**k for k in range(degree + 1)], 1)
    weight = 1 / scale
    for _ in range(iterations):
        c, *_ = np.linalg.lstsq(basis * weight[:, None], target * weight, rcond=None)
        err = (basis @ c - target) / scale
        weight = weight * (1 + 0.5 * np.abs(err) / np.abs(err).max())
    return c, np.abs(err).max()


def main():
    erf = np.vectorize(math.erf)
    erfc = np.vectorize(math.erfc)
    x = chebyshev_nodes(0, SPLIT)
    x = x[x > 1e-6]
    p, p_err = minimax(x * x, erf(x) / x - 1, 5, np.ones_like(x))
    a = chebyshev_nodes(SPLIT, TOP)
    g = erfc(a) * np.exp(a * a)
    q, q_err = minimax(1 / (1 + 0.5 * a), g, 6, g)
    print(f"P: max abs error {p_err:.2e}:", ", ".join(f"{v:.10e}" for v in p))
    print(f"G: max rel error {q_err:.2e}:", ", ".join(f"{v:.10e}" for v in q))


if __name__ == "__main__":
    main()
