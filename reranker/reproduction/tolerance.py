"""Whether two numbers agree within a tolerance, shared by the run-vs-reference comparison and the claims."""

from __future__ import annotations

import math


def within(value: float, reference: float, tolerance: float) -> bool:
    """|value - reference| <= tolerance, inclusive despite float rounding (0.8253 - 0.8153 is
    0.010000000000000009); a tolerance of 0 stays exact."""
    difference = abs(value - reference)
    return difference <= tolerance or math.isclose(difference, tolerance, rel_tol=1e-9)
