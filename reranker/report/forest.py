"""The index's judged lines, labelled, and the forest plot of every test in it (`tables index --figure`).

A claim is named by its source table and its number there ("Table 2.3 · 1"), a line of a claim with several by a
letter too ("Table 2.3 · 1b"): the README's verdict table (reranker.report.seed_index) and the forest plot share
these labels. The plot draws one horizontal line per test of the index (`Line.tests`, corrected or not): its
95% bootstrap interval and point estimate (the mean per-query difference, ours - than), the claim's margin as a
shaded band where the test has one (±δ for `near`, 0 to δ for `no_better`), zero as a vertical line, coloured by
the verdict of the line the test belongs to, one panel per work (each on its own scale).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from reranker.reproduction import verdicts as v
from reranker.reproduction.claims import Line, Verdict

FIGURE = "verdicts_forest"  # figures/verdicts_forest.png in the run folder (the layout's `figure` pattern)
COLOURS = {
    v.REPRODUCED: "#1b9e4b",
    v.CONTRADICTED: "#d62728",
    v.INCONCLUSIVE: "#e69f00",
    v.NOT_AT_SETTING: "#7b5ea7",
    v.NOT_COMPARABLE: "#8c564b",
    v.NOT_TRAINED: "#9a9a9a",
    v.PENDING: "#56b4e9",
}
OTHER_COLOUR = "#444444"  # a word no colour is given for (a new one): drawn, in the legend too
LABEL_CHARS = 80  # a test's label on the plot, shortened past this
_VALUE = re.compile(r" (?:-?\d[\d,]*\.\d+|–)(?=,|;|$)")  # a value in a line's text ("A 0.5407, B 0.5140")


@dataclass(frozen=True)
class Labelled:
    """One line of a claim (or a claim with no line: `line` None, its word in `verdict`), with its labels."""

    work: int  # index of the work in the seed file
    entry: Mapping  # the seed table
    number: int  # the claim's number in its seed table, from 1
    claim: str  # "Table 2.3 · 1", or "Table 2.3 · 1b" for a claim's second line
    verdict: Verdict
    line: Line | None

    @property
    def word(self) -> str:
        return self.line.verdict() if self.line is not None else self.verdict.word


def table_name(entry: Mapping) -> str:
    """The seed table's short name: its source's words before the first colon ("Table 2.3")."""
    return entry["source"].split(":", 1)[0].strip()


def _letter(i: int) -> str:
    """a, b, ..., z, aa, ab, ...: the i-th line (from 0) of a claim."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def labelled(work: int, entries: Sequence[Mapping], judged: Sequence[Sequence[Verdict]]) -> Iterator[Labelled]:
    """Every line of one work's claims (and every claim with none), in the order of the seed file."""
    for entry, verdicts_of_entry in zip(entries, judged):
        for number, verdict in enumerate(verdicts_of_entry, 1):
            name = f"{table_name(entry)} · {number}"
            if not verdict.lines:
                yield Labelled(work, entry, number, name, verdict, None)
            for i, line in enumerate(verdict.lines):
                yield Labelled(work, entry, number, name + (_letter(i) if len(verdict.lines) > 1 else ""), verdict, line)


def measure_of(line: Line) -> tuple[str, str]:
    """(the measure, what the line's text says before it) where its text names its rows after them
    ("RR@10: A 0.54 vs B 0.65" -> ("RR@10", "")); ("", "") where it does not."""
    if not line.rows:
        return "", ""
    at = line.text.find(line.rows.split(" vs ")[0])
    prefix = line.text[:at].rstrip().removesuffix(":") if at > 0 else ""
    head, _, measure = prefix.rpartition(": ")
    return (measure, head.split(" (")[0]) if 0 < len(measure) <= 40 else ("", "")


def short(text: str, limit: int) -> str:
    """`text` on one line, cut at a word before `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def rows_of(line: Line, limit: int = 160) -> str:
    """Our rows as the reader names them, with the measure ("A vs B (RR@10)"); for a trend or a set of rows, its text
    without the values ("RR@10 by Parameters: A, B, C"); a short form of the text where the line names no rows."""
    if not line.rows:
        return short(line.text, limit)
    if " vs " not in line.rows:
        return short(_VALUE.sub("", line.text), limit)
    measure, head = measure_of(line)
    said = "; ".join(p for p in (measure, head) if p)
    return short(line.rows + (f" ({said})" if said else ""), limit)


@dataclass(frozen=True)
class Point:
    """One test of the index, as the forest plot draws it."""

    work: str  # the work's short name (its title before " (")
    claim: str  # "Table 2.3 · 1b"
    label: str  # what the test compares
    effect: float
    low: float
    high: float
    margin: float | None
    expect: str
    word: str  # the verdict of the line the test belongs to
    p: float  # the corrected p (uncorrected where `corrected` is false)
    corrected: bool


def work_name(work: Mapping) -> str:
    return work["title"].split(" (")[0].strip()


def points(works: Sequence[Mapping], judged: Sequence[Sequence[Sequence[Verdict]]]) -> list[Point]:
    """Every test of the index (`judge_all`'s verdicts), one point each, in the order of the README's table."""
    out = []
    for w, (work, judged_work) in enumerate(zip(works, judged)):
        for item in labelled(w, work["tables"], judged_work):
            tests = item.line.tests if item.line is not None else []
            for k, test in enumerate(tests):
                label = rows_of(item.line, LABEL_CHARS) if k == 0 else short(test.name.split(": ", 1)[-1], LABEL_CHARS)
                out.append(Point(work_name(work), item.claim, label, test.effect, test.ci[0], test.ci[1], test.margin,
                                 test.expect, item.word, test.p_adjusted, test.corrected))
    return out


def _band(point: Point) -> tuple[float, float] | None:
    if point.margin is None:
        return None
    return (-point.margin, point.margin) if point.expect == "near" else (0.0, point.margin)


def forest_figure(found: Sequence[Point], path: str | os.PathLike, title: str = "") -> None:
    """The forest plot of `found`: one panel per work, one line per test (top to bottom in the README's order)."""
    from matplotlib.patches import Patch

    from reranker.report.figures import _pyplot, _save

    plt = _pyplot()
    works = list(dict.fromkeys(p.work for p in found)) or ["no test"]
    by_work = {w: [p for p in found if p.work == w] for w in works}
    heights = [max(1, len(by_work[w])) + 1.5 for w in works]
    fig, axes = plt.subplots(len(works), 1, figsize=(11, 0.22 * sum(heights) + 1.2),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, work in zip(axes[:, 0], works):
        rows = by_work[work]
        values = [x for p in rows for x in (p.low, p.high, p.effect, *(_band(p) or ())) if math.isfinite(x)]
        span = max([abs(x) for x in values] + [1e-4])
        for y, p in enumerate(rows):
            colour = COLOURS.get(p.word, OTHER_COLOUR)
            band = _band(p)
            if band is not None:
                ax.fill_betweenx([y - 0.42, y + 0.42], *band, color="#9ecae1", alpha=0.45, linewidth=0)
            if math.isfinite(p.low) and math.isfinite(p.high):
                ax.hlines(y, p.low, p.high, color=colour, linewidth=1.6)
            if math.isfinite(p.effect):
                ax.plot(p.effect, y, "o" if p.corrected else "D", color=colour, markersize=4 if p.corrected else 3.5,
                        markerfacecolor=colour if p.corrected else "white")
        ax.axvline(0, color="black", linewidth=0.7)
        ax.set_xlim(-1.08 * span, 1.08 * span)
        ax.set_ylim(len(rows) - 0.5 if rows else 0.5, -0.5)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"{p.claim}  {p.label}" for p in rows], fontsize=6.5)
        ax.set_title(work, fontsize=9, loc="left")
        if not rows:
            ax.text(0, 0, "no test: this run's numbers store no per-query values", ha="center", va="center", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    axes[-1, 0].set_xlabel("effect: mean per-query difference, ours - than (95% bootstrap CI)", fontsize=8)
    words = list(dict.fromkeys([*COLOURS, *(p.word for p in found)]))
    handles = [Patch(color=COLOURS.get(w, OTHER_COLOUR), label=w) for w in words]
    handles.append(Patch(color="#9ecae1", alpha=0.45, label="the claim's margin"))
    axes[0, 0].legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=6.5, frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    _save(fig, path)
