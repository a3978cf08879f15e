"""How a claim's numbers become a verdict: paired tests, equivalence tests, bootstrap intervals and one
multiple-testing correction across the whole index.

A claim about a difference is judged on paired per-query values d = ours - than (the queries both rows
have). Its effect is the mean of d; its 95% interval a paired bootstrap over queries (percentile,
`BOOTSTRAP` resamples, seeded from the test's own name, so a verdict does not depend on the order of the
claims). What each expectation tests, with α = `ALPHA` after the correction:

- `above` / `below`: the two-sided paired t-test (as the tables mark †). *Reproduced* where the effect lies
  in the source's direction and is significant; *contradicted* where it is significant the other way.
- `near` (the source says "similar", "equal", "flattens"), with the claim's margin δ: two one-sided tests
  (TOST, statsmodels' `ttost_paired`) that -δ < d < δ give *reproduced*; a one-sided test that the effect
  lies beyond δ on the side of its estimate gives *contradicted*.
- `no_better` ("does not outperform"), with margin δ: a one-sided test that d < δ gives *reproduced*; a
  one-sided test that d > 0 (ours significantly better) gives *contradicted*.
In each, the two hypotheses whose rejection gives the two verdicts cannot both be true (for δ > 0), so one
p-value per test — the smaller — enters the correction, and the verdict is the one it supports.
*Inconclusive* otherwise.

Quantities with no per-query values (a loss, a speed, a token accuracy, a parameter count) have no test:
the verdict rests on the two values against the claim's margin (*reproduced* beyond it in the source's
direction, *contradicted* beyond it the other way), and says so.

Multiple testing: every p-value of the index is adjusted together with Holm's step-down method
(statsmodels `multipletests(method="holm")`). The claims share rows and queries, so their tests are
dependent; Holm controls the family-wise error rate under any dependence (Benjamini-Hochberg's FDR needs
positive dependence, which a "reproduced" and a "contradicted" on shared rows need not have), and each
verdict is read on its own, so the guarantee that matters is that no verdict of the index is a false one
(with probability 1 - α).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

ALPHA = 0.05
BOOTSTRAP = 10_000
CONFIDENCE = 0.95
CORRECTION = "holm"

REPRODUCED, CONTRADICTED, INCONCLUSIVE = "reproduced", "contradicted", "inconclusive"
NOT_AT_SETTING = "not at the source's setting"
NOT_TRAINED = "not trained"  # a row whose checkpoint did not get below its label prior, or kept its untrained start
NOT_COMPARABLE = "not comparable"  # rows of two tables made from different shared starts (parts on other machines)
PENDING = "pending"  # numbers that judge nothing until a run remakes them (stale jobs, or no per-query values)
WORDS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_AT_SETTING, NOT_COMPARABLE, NOT_TRAINED, PENDING)
EXPECT = ("above", "below", "near", "no_better")

RULE = (
    "**How a verdict is decided** (`reranker/reproduction/verdicts.py`). Each claim names our row and the row it is "
    "compared with, and is judged on the paired per-query values of the two (the queries both have): the effect "
    "is the mean per-query difference, with its 95% confidence interval from a paired bootstrap over queries "
    f"({BOOTSTRAP:,} resamples, seeded). A claim of a direction (above, below) is **reproduced** where our "
    "effect lies in the source's direction and a two-sided paired t-test finds it significant, **contradicted** "
    "where it is significant the other way. A claim that two rows are near (similar, equal, flat) is reproduced "
    "where two one-sided tests (TOST) put the effect within the margin the claim states, contradicted where a "
    "one-sided test puts it beyond that margin; a claim that a row does not outperform another is reproduced "
    "where a one-sided test puts the effect below the margin, contradicted where ours is significantly better. "
    "Every p-value of this index is corrected together with Holm's method (statsmodels; valid however the "
    "claims' tests depend on each other, as they do where they share rows), at α = 0.05; p is the corrected "
    "value, and the verdict rests on it, not on the interval, which is each effect's own (not widened for the "
    "other tests). **Inconclusive** otherwise. A claim on a quantity with no per-query values (a loss, a speed, a "
    "token accuracy) rests on the two values against its margin, and says so. Where seed reruns exist (NTNU "
    "Table 5.4), an effect smaller than the seeds' range is never called reproduced or contradicted. A claim "
    "the source states at a setting we do not run reads **not at the source's setting**, with our effect beside "
    "it (uncorrected); where the source's own cells are at our setting, the direction they show is a line of its "
    "own, judged. A line on a row whose model did not learn (held-out loss not 5% below its label prior, or its "
    "untrained start kept) reads **not trained**, with its losses, and joins no correction; not a line on its speed, "
    "which is its architecture's on this machine whether it learned or not. A line on rows of two "
    "tables made from different shared starts (parts made on other machines: their common baseline is other "
    "models) reads **not comparable** and joins no correction. One line per row and "
    "group: nothing is aggregated over rows or collections."
)


def _seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")


def paired(a: Mapping[str, float], b: Mapping[str, float]) -> np.ndarray:
    """The per-query differences a - b over the queries both have, in query order."""
    common = sorted(q for q in a if q in b)
    return np.array([float(a[q]) - float(b[q]) for q in common], dtype=float)


def bootstrap_ci(d: np.ndarray, name: str, resamples: int = BOOTSTRAP, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of the mean of `d` over `resamples` resamples of its queries, seeded from `name`."""
    if len(d) == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(_seed(name))
    means = np.empty(resamples)
    for start in range(0, resamples, 1000):  # in blocks: 1,000 x n indices at a time
        stop = min(resamples, start + 1000)
        means[start:stop] = d[rng.integers(0, len(d), size=(stop - start, len(d)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def _one_sided(d: np.ndarray, value: float, larger: bool) -> float:
    """p of the one-sided t-test H1: mean(d) > value (larger) or < value."""
    from scipy import stats

    if len(d) < 2:
        return math.nan
    shifted = d - value
    if np.all(shifted == shifted[0]):  # no spread: the sign alone decides
        return 0.0 if (shifted[0] > 0 if larger else shifted[0] < 0) else 1.0
    return float(stats.ttest_1samp(shifted, 0.0, alternative="greater" if larger else "less").pvalue)


def _two_sided(d: np.ndarray) -> float:
    from scipy import stats

    if len(d) < 2:
        return math.nan
    if np.all(d == d[0]):
        return 1.0 if d[0] == 0 else 0.0
    return float(stats.ttest_1samp(d, 0.0).pvalue)


def _tost(d: np.ndarray, margin: float) -> float:
    """p of TOST (statsmodels' ttost_paired, on d against 0): the effect lies within (-margin, margin)."""
    from statsmodels.stats.weightstats import ttost_paired

    if len(d) < 2:
        return math.nan
    if np.all(d == d[0]):
        return 0.0 if abs(d[0]) < margin else 1.0
    p, _, _ = ttost_paired(d, np.zeros_like(d), -margin, margin)
    return float(p)


@dataclass
class Test:
    """One judged comparison: its raw p-value and which verdict a significant p gives."""

    name: str  # unique in the index: seeds the bootstrap
    expect: str  # above | below | near | no_better
    effect: float
    ci: tuple[float, float]
    n: int
    p_raw: float  # nan: nothing to test
    supports: str  # the verdict a significant p_raw gives: reproduced | contradicted
    margin: float | None = None
    p_adjusted: float = math.nan
    corrected: bool = True  # False: shown beside a claim it does not judge, p uncorrected
    unpaired: str = ""  # where the two rows' queries differ: how many each has (the test pairs those both have)

    @property
    def significant(self) -> bool:
        return not math.isnan(self.p_adjusted) and self.p_adjusted < ALPHA

    @property
    def word(self) -> str:
        return self.supports if self.significant else INCONCLUSIVE

    def text(self) -> str:
        low, high = self.ci
        p = "p n/a" if math.isnan(self.p_adjusted) else f"p {_p(self.p_adjusted)}" + ("" if self.corrected else " uncorrected")
        kind = {"near": f"TOST, margin ±{_num(self.margin)}", "no_better": f"margin {_num(self.margin)}"}.get(self.expect, "paired t-test")
        return (f"effect {_signed(self.effect)} [95% CI {_signed(low)}, {_signed(high)}], {p} ({kind}, n {self.n}"
                + (f"; {self.unpaired}" if self.unpaired else "") + ")")


def difference_test(name: str, d: np.ndarray, expect: str, margin: float | None = None) -> Test:
    """The test a claim of `expect` asks of the paired differences `d` (ours - than)."""
    if expect not in EXPECT:
        raise ValueError(f"expect {expect!r} is not one of {', '.join(EXPECT)}")
    if expect in ("near", "no_better") and (margin is None or margin <= 0):
        raise ValueError(f"a {expect} claim needs a positive margin")
    effect = float(d.mean()) if len(d) else math.nan
    ci = bootstrap_ci(d, name)
    if expect in ("above", "below"):
        p = _two_sided(d)
        right_way = effect > 0 if expect == "above" else effect < 0
        supports = REPRODUCED if right_way else CONTRADICTED
    elif expect == "near":
        p_in = _tost(d, margin)
        p_out = _one_sided(d, margin, larger=True) if effect >= 0 else _one_sided(d, -margin, larger=False)
        p, supports = (p_in, REPRODUCED) if p_in <= p_out else (p_out, CONTRADICTED)
    else:  # no_better
        p_in = _one_sided(d, margin, larger=False)
        p_out = _one_sided(d, 0.0, larger=True)
        p, supports = (p_in, REPRODUCED) if p_in <= p_out else (p_out, CONTRADICTED)
    return Test(name, expect, effect, ci, len(d), p, supports, margin)


def point_word(ours: float, than: float, expect: str, margin: float) -> str:
    """The verdict on two values with no per-query values behind them: beyond the margin either way, or not."""
    d = ours - than
    if expect == "above":
        return REPRODUCED if d > margin else CONTRADICTED if d < -margin else INCONCLUSIVE
    if expect == "below":
        return REPRODUCED if d < -margin else CONTRADICTED if d > margin else INCONCLUSIVE
    if expect == "near":
        return REPRODUCED if abs(d) <= margin else CONTRADICTED
    return REPRODUCED if d <= margin else CONTRADICTED  # no_better


@dataclass
class Family:
    """Every test of the index, corrected together once all are in (`correct`)."""

    tests: list[Test] = field(default_factory=list)

    def add(self, test: Test) -> Test:
        if any(t.name == test.name for t in self.tests):
            raise ValueError(f"two tests named {test.name!r}")
        self.tests.append(test)
        return test

    def correct(self) -> None:
        from statsmodels.stats.multitest import multipletests

        tested = [t for t in self.tests if not math.isnan(t.p_raw)]
        if not tested:
            return
        _, adjusted, _, _ = multipletests([t.p_raw for t in tested], alpha=ALPHA, method=CORRECTION)
        for test, p in zip(tested, adjusted):
            test.p_adjusted = float(p)

    def __len__(self) -> int:
        return sum(not math.isnan(t.p_raw) for t in self.tests)


def combine(words: Sequence[str]) -> str:
    """One verdict from several tests that must all hold (a monotone trend, rows all equal): contradicted if
    any test contradicts, reproduced if all reproduce, else inconclusive."""
    if any(w == CONTRADICTED for w in words):
        return CONTRADICTED
    if words and all(w == REPRODUCED for w in words):
        return REPRODUCED
    return INCONCLUSIVE


def _p(p: float) -> str:
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _signed(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:+.4f}"
