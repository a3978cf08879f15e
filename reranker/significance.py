"""Significance tests over per-query values."""

from __future__ import annotations

import math
from collections.abc import Mapping


def paired_ttest(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[float, float, int]:
    """Two-sided paired t-test over the queries both have: (t, p, n). Identical inputs give p = 1."""
    from scipy import stats

    common = [qid for qid in a if qid in b]
    if len(common) < 2:
        return math.nan, math.nan, len(common)
    xs = [a[qid] for qid in common]
    ys = [b[qid] for qid in common]
    if all(x == y for x, y in zip(xs, ys)):
        return 0.0, 1.0, len(common)
    result = stats.ttest_rel(xs, ys)
    return float(result.statistic), float(result.pvalue), len(common)
