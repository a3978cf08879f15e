"""A claim's verdict as lines: one judged statement each (one row in one group, or a whole trend), worded once the
index's tests are corrected together (reranker.reproduction.claims), and the names and numbers they show.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reranker.reproduction import verdicts as v
from reranker.reproduction.seeds import patterns

# ---------------------------------------------------------------------------------------------------------
# Reading what the claims name


def fmt(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else (
        f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4f}")


def matching(names: Sequence[str], globs: Sequence[str] | str) -> list[str]:
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns(globs))]


def setting_words(text: str) -> str:
    """A setting's words, normalised: "lr 3e-05, 1 epoch" and "lr 3e-5, 1 epoch" are one setting."""
    return re.sub(r"e-0+(\d)", r"e-\1", re.sub(r"\s+", " ", text.strip().lower()))


def deciding_pair(tests: list[v.Test]) -> v.Test:
    """Of a claim's pairwise tests (the runs differ, all are equal), the one its verdict rests on: a pair significantly
    beyond the margin decides either way (they differ; not all are equal); else the pair least sure to be within it."""
    beyond = [t for t in tests if t.word == v.CONTRADICTED]
    if beyond:
        return min(beyond, key=lambda t: (t.p_adjusted, -abs(t.effect)))
    return max(tests, key=lambda t: (t.p_adjusted, abs(t.effect)))


# ---------------------------------------------------------------------------------------------------------
# Lines: one judged statement each (one row in one group, or a whole trend), worded once the family is corrected


@dataclass
class Line:
    text: str  # what was compared, with values
    tests: list[v.Test] = field(default_factory=list)
    decide: Callable[[list[v.Test]], str] | None = None  # the word from the corrected tests; None: `word`
    word: str = v.INCONCLUSIVE
    notes: list[str] = field(default_factory=list)  # after the tests: ER and ΔRI, the spread, the source at ours
    floor: float | None = None  # an effect smaller than this (the seeds' range) is inconclusive
    not_at: str | None = None  # the source's setting, where we do not run it
    rows: str = ""  # our rows, as a reader names them ("A vs B", or the rows of a trend)
    reproduction: str = ""  # ER and ΔRI against the source's cells, with the source's own direction
    untrained: str | None = None  # why a row it compares did not learn (its held-out losses): "not trained"
    apart: str | None = None  # why its rows are not one experiment (tables from different shared starts)
    pairwise: bool = False  # a claim on every pair of rows: its one-row summary shows the deciding pair, not the first

    def lead(self) -> v.Test:
        """The test that speaks for the line where one must (the index's row): for a claim that some pair differs,
        the pair that decided it, not whichever pair came first."""
        return deciding_pair(self.tests) if self.pairwise else self.tests[0]

    def verdict(self) -> str:
        if self.not_at is not None:
            return v.NOT_AT_SETTING
        if self.apart is not None:
            return v.NOT_COMPARABLE
        if self.untrained is not None:
            return v.NOT_TRAINED
        word = self.decide(self.tests) if self.decide is not None else self.word
        if (self.floor is not None and word in (v.REPRODUCED, v.CONTRADICTED)
                and all(abs(t.effect) < self.floor for t in self.tests)):
            return v.INCONCLUSIVE
        return word

    def render(self) -> str:
        parts = [self.text] + [t.text() for t in self.tests] + self.notes + [self.apart or "", self.untrained or "",
                                                                            self.reproduction]
        return f"**{self.verdict()}**: " + "; ".join(p for p in parts if p)


@dataclass
class Verdict:
    """A claim's lines, or a word with no line (not run, pending), and where the source states it."""

    lines: list[Line] = field(default_factory=list)
    word: str = ""  # not run | pending, where there are no lines
    text: str = ""
    cite: str = ""
    says: str = ""
    note: str = ""  # the seed file's note on the claim: how to read it here

    @property
    def words(self) -> list[str]:
        return [line.verdict() for line in self.lines] or [self.word]

    def render(self) -> str:
        body = "<br>".join(line.render() for line in self.lines) if self.lines else (
            self.word + (f": {self.text}" if self.text else ""))
        if self.cite:
            body += f" [{self.cite}" + (f": “{self.says.strip()}”" if self.says else "") + "]"
        return body


def single(test: v.Test) -> str:
    return test.word


def every(tests: list[v.Test]) -> str:
    return v.combine([t.word for t in tests])


def no_values(line: Line) -> None:
    """Numbers stored without per-query values (made before they were kept) judge nothing: pending until remade."""
    line.word = v.PENDING
    line.notes.append("no per-query values stored with these numbers, so no test: pending until a run remakes them")
