"""Significance tests over per-query values."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


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


# Multiple-testing corrections, as PyTerrier's Experiment(correction=...): each maps a family's
# p-values to adjusted ones, compared with the same alpha. A family is one table column's tests
# against one reference row.
def no_correction(pvalues: Sequence[float]) -> list[float]:
    return list(pvalues)


def bonferroni(pvalues: Sequence[float]) -> list[float]:
    return _adjusted(pvalues, "bonferroni")


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down: the i-th smallest p times (m - i), kept monotone, capped at 1."""
    return _adjusted(pvalues, "holm")


def _adjusted(pvalues: Sequence[float], method: str) -> list[float]:
    """statsmodels' adjusted p-values (`multipletests`), as the seed index's correction (reranker.reproduction.verdicts)."""
    from statsmodels.stats.multitest import multipletests

    if not pvalues:
        return []
    return [float(p) for p in multipletests(list(pvalues), method=method)[1]]


@dataclass(frozen=True)
class Correction:
    adjust: Callable[[Sequence[float]], list[float]]
    phrase: str  # how a table's note names it


CORRECTIONS = {
    "none": Correction(no_correction, "not corrected for multiple testing"),
    "bonferroni": Correction(bonferroni, "Bonferroni-corrected over each column's tests"),
    "holm": Correction(holm, "Holm-corrected over each column's tests"),
}
