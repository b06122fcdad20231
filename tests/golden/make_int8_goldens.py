#!/usr/bin/python3
"""Regenerate tests/data/golden-int8/linear.json: the int8 dense layer's reference outputs.

bertserve's dtype = "int8" quantizes each dense weight per output channel
and each activation row, symmetrically, and multiplies the integers
(model/linear_int8.c). reference.linear_int8 is that product in float64.
This script draws weights and inputs for a few shapes (row counts that hit
oneDNN's different kernel tails, an all-zero row and channel, a row whose
largest magnitude is negative) and writes them with the reference's outputs;
test_linear_int8.c runs the engine's product on them.

Every value is drawn a safe distance (at least MARGIN of a step) from an
int8 rounding boundary, after rounding to float32: the engine computes
x / s in float32, the reference in float64, and a value that rounded the
other way in one of them would change the answer by a whole step.

Whole encoders in int8 are checked against the F32 goldens instead
(test_golden: cosine >= 0.99), since there a float32-versus-float64
difference in any layer's input moves some roundings, and int8 rounding
passes them on.

Run from the repository root with Debian's python:
    /usr/bin/python3 tests/golden/make_int8_goldens.py
"""

import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import reference  # noqa: E402

OUT = os.path.join(ROOT, "tests", "data", "golden-int8", "linear.json")
# (rows, in, out)
SHAPES = [(1, 64, 48), (5, 96, 80), (40, 128, 64), (100, 64, 40)]
MARGIN = 0.1


def draw(rows, cols, g):
    """(rows, cols) float32 values, each row r = scale_r * (q + d) / 127
    with q integer, |d| <= 0.5 - 2 * MARGIN and one entry exactly +-scale_r
    (the row's maximum magnitude, so that s = scale_r / 127)."""
    q = torch.randint(-126, 127, (rows, cols), generator=g).double()
    d = (torch.rand(rows, cols, generator=g, dtype=torch.float64) - 0.5) * (1 - 4 * MARGIN)
    scale = torch.exp(torch.randn(rows, 1, generator=g, dtype=torch.float64))
    m = (q + d) / 127.0
    top = torch.randint(0, cols, (rows,), generator=g)
    sign = torch.where(torch.rand(rows, generator=g) < 0.5, -1.0, 1.0).double()
    m[torch.arange(rows), top] = sign
    return (m * scale).float().double()


def check_margin(m):
    """Each x / s in float64 at least MARGIN / 2 of a step from a boundary."""
    s = m.abs().amax(dim=-1, keepdim=True) / 127.0
    v = m / torch.where(s > 0, s, 1.0)
    gap = float(((v - v.floor()) - 0.5).abs().min())
    if gap < MARGIN / 2:
        raise SystemExit(f"a value lies {gap:.3g} of a step from a rounding boundary")


def case(rows, cols_in, cols_out, g):
    x = draw(rows, cols_in, g)
    w = draw(cols_out, cols_in, g)
    if rows > 2:
        x[2] = 0.0  # an all-zero row: scale 0, output 0
    w[cols_out // 2] = 0.0  # an all-zero channel
    check_margin(x)
    check_margin(w)
    y = reference.linear_int8(x, w, torch.zeros(cols_out, dtype=torch.float64))
    exact = x @ w.T
    rel = float((y - exact).norm() / exact.norm())
    print(f"{rows}x{cols_in} -> {cols_out}: int8 vs exact product, relative {rel:.2e}")
    return {"rows": rows, "in": cols_in, "out": cols_out,
            "x": [float(f"{v:.9g}") for v in x.flatten().tolist()],
            "w": [float(f"{v:.9g}") for v in w.flatten().tolist()],
            "y": [float(f"{v:.17g}") for v in y.flatten().tolist()]}


def main():
    reference.self_check()
    g = torch.Generator().manual_seed(23)
    cases = [case(*shape, g) for shape in SHAPES]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"format": 1, "about": __doc__.splitlines()[0], "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")
    print(f"{OUT}: {os.path.getsize(OUT) / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
