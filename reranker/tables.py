"""Experiment tables (Markdown, CSV, LaTeX) with significance marks, in the spirit of PyTerrier's.

A table is rows of systems against column groups (collections) of measures. Each cell may carry a
mark: `†` means p < 0.05 in a two-sided paired t-test against the baseline row of its group.
Tables are written from saved evaluations (reranker.evaluate JSON), never from typed numbers; extra
columns (`--value`) are read from JSON files the suite wrote (checkpoint meta, throughput), and summary rows
(`--summary-row`) give the mean ± sample standard deviation over rows such as seeds. Figures over runs,
checkpoints and sweeps are in reranker.figures (`tables figure ...`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reranker.formats.atomic import write_json, write_text
from reranker.formats.errors import exits_on_input_error
from reranker.formats.evaluations import Evaluation, read_evaluation
from reranker.formats.source_numbers import SourceTable, read_source_numbers
from reranker.reporting import MEASURE_LABELS, TableError, provenance  # noqa: F401 (shared with figures)
from reranker.significance import CORRECTIONS, paired_ttest

SIGNIFICANT = "†"
SECOND_SIGNIFICANT = "‡"
PLUS_MINUS = "±"
SOURCE_COLUMN = "source:"  # a layout column holding the source's value beside our measure
SOURCE_MARK = "§"  # marks the source's numbers
SOURCE_FILE = "workflow/config/source_numbers.yaml"
PENDING = "pending"
Value = float | int | str | None  # an extra column's cell: a number, or a string printed verbatim (e.g. "6/384")


@dataclass
class Table:
    """Rows x (group, measure) cells; `marks` holds significance marks per cell."""

    caption: str
    groups: list[str]
    measures: list[str]
    rows: list[str] = field(default_factory=list)
    row_header: str = "System"
    bold_best: bool = True  # the best row per column; off when rows are not competing systems
    cells: dict[tuple[str, str, str], float] = field(default_factory=dict)
    marks: dict[tuple[str, str, str], str] = field(default_factory=dict)
    # Each tested cell's p-value per reference mark (†, ‡): what a correction adjusts.
    pvalues: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)  # mark -> the row it tests against
    correction: str = "none"  # the multiple-testing correction behind the marks
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)
    # Columns after the measures, the same value in every group; never tested, never bold.
    extra_columns: list[str] = field(default_factory=list)
    extras: dict[tuple[str, str], Value] = field(default_factory=dict)  # (row, column) -> value
    extra_formats: dict[str, str] = field(default_factory=dict)  # column -> format spec
    # Summary rows: (row, group, measure) -> (mean, sample sd, n) over other rows' values.
    summaries: dict[tuple[str, str, str], tuple[float, float, int]] = field(default_factory=dict)
    # How a measure's number prints (column, value -> text); default four decimals.
    number_format: Callable[[str, float], str] | None = None
    # The source's own numbers (workflow/config/source_numbers.yaml): beside ours where the source has our
    # row at our setting, and all of them in a block under the table.
    source: SourceTable | None = None
    # Cells stored from an earlier run that are no longer valid (printed "pending"), and why.
    pending: set[tuple[str, str, str]] = field(default_factory=set)
    pending_why: str = ""

    @property
    def columns(self) -> list[str]:
        """The measures, then the extra value columns."""
        return self.measures + self.extra_columns

    def add_value(self, row: str, column: str, value: Value) -> None:
        """An extra column's value for `row` (in every group): a number or a string, never significance-tested."""
        if column in self.measures:
            raise TableError(f"column {column!r} is already a measure of the table")
        if row not in self.rows:
            raise TableError(f"row {row!r} is not a row of the table (rows: {', '.join(self.rows)})")
        if column not in self.extra_columns:
            self.extra_columns.append(column)
        self.extras[(row, column)] = value

    def add_summary(self, label: str, rows: Sequence[str]) -> None:
        """A row of mean ± sample standard deviation over `rows` (e.g. seeds), per group and measure."""
        if label in self.rows:
            raise TableError(f"summary row {label!r} is already a row of the table")
        unknown = [r for r in rows if r not in self.rows]
        if unknown or len(rows) < 2:
            raise TableError(f"summary row {label!r} needs two or more rows of the table; "
                             + (f"unknown: {', '.join(unknown)} (rows: {', '.join(self.rows)})" if unknown else f"got {len(rows)}"))
        for g in self.groups:
            for m in self.measures:
                values = [self.cells[(r, g, m)] for r in rows if not math.isnan(self.cells.get((r, g, m), math.nan))]
                if values:
                    sd = statistics.stdev(values) if len(values) > 1 else math.nan
                    self.summaries[(label, g, m)] = (statistics.fmean(values), sd, len(values))
        self.rows.append(label)

    def value_text(self, row: str, column: str) -> str:
        """An extra column's cell: strings verbatim, numbers in the column's format (ints as ints, floats .4f)."""
        value = self.extras.get((row, column))
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        if isinstance(value, str):
            return value
        spec = self.extra_formats.get(column) or ("d" if isinstance(value, int) else ".4f")
        return format(value, spec)

    def add(self, row: str, group: str, measure: str, value: float, mark: str = "") -> None:
        if row not in self.rows:
            self.rows.append(row)
        self.cells[(row, group, measure)] = value
        if mark:
            self.marks[(row, group, measure)] = mark

    def correct(self, correction: str = "none", alpha: float = 0.05) -> None:
        """Marks from the stored p-values, adjusted per family: one column's tests against one reference."""
        adjust = CORRECTIONS[correction].adjust
        self.correction, self.alpha = correction, alpha
        families: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
        for (row, group, measure), tests in self.pvalues.items():
            for symbol, p in tests.items():
                if not math.isnan(p):
                    families.setdefault((group, measure, symbol), []).append((row, p))
        marks = {key: mark for key, mark in self.marks.items() if key not in self.pvalues}  # set by hand: kept
        for (group, measure, symbol), tests in families.items():
            for (row, _), p in zip(tests, adjust([p for _, p in tests])):
                if p < alpha:
                    marks[(row, group, measure)] = marks.get((row, group, measure), "") + symbol
        # † before ‡ in a cell, whatever order the families came in
        self.marks = {key: "".join(sorted(mark, key=(SIGNIFICANT + SECOND_SIGNIFICANT).index)) for key, mark in marks.items()}

    def text(self, row: str, group: str, measure: str) -> str:
        if measure.startswith(SOURCE_COLUMN):
            value = self.source.beside(row, group, measure[len(SOURCE_COLUMN):], self.groups) if self.source else None
            return "–" if value is None else f"{value:.4f}"
        if (row, group, measure) in self.pending:
            return PENDING
        if measure in self.extra_columns:
            return self.value_text(row, measure)
        if (row, group, measure) in self.summaries:
            mean, sd, _ = self.summaries[(row, group, measure)]
            return f"{mean:.4f} {PLUS_MINUS} " + ("–" if math.isnan(sd) else f"{sd:.4f}")
        value = self.cells.get((row, group, measure))
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        number = self.number_format(measure, value) if self.number_format else f"{value:.4f}"
        return f"{number}{self.marks.get((row, group, measure), '')}"

    def best(self, group: str, measure: str) -> set[str]:
        """The rows to bold: every row that ties with the best at the printed precision."""
        if not self.bold_best or measure in self.extra_columns:
            return set()
        scored = {r: round(self.cells[(r, group, measure)], 4) for r in self.rows if (r, group, measure) in self.cells
                  and not math.isnan(self.cells[(r, group, measure)]) and (r, group, measure) not in self.pending}
        top = max(scored.values(), default=None)
        return {r for r, value in scored.items() if value == top}

    def layout(self) -> list[tuple[str, str]]:
        """The printed (group, column) cells of a row: each group's measures, each followed by the source's
        value where the source has one for some row (`source:` + measure), then the extra columns once
        (their value is the same in every group)."""
        cells = []
        for g in self.groups:
            for m in self.measures:
                cells.append((g, m))
                if self.source and any(self.source.beside(r, g, m, self.groups) is not None for r in self.rows):
                    cells.append((g, SOURCE_COLUMN + m))
        return cells + [(self.groups[0], c) for c in self.extra_columns]

    def header(self, with_group: bool = True) -> list[str]:
        def label(g: str, m: str) -> str:
            source = m.startswith(SOURCE_COLUMN)
            m = m.removeprefix(SOURCE_COLUMN)
            text = MEASURE_LABELS.get(m, m)
            text = f"{g} {text}" if with_group and len(self.groups) > 1 and m in self.measures else text
            return f"{text} {SOURCE_MARK}" if source else text

        return [self.row_header] + [label(g, m) for g, m in self.layout()]

    def source_columns(self) -> list[tuple[str | None, str, str | None]]:
        """The source block's columns: (group, column, setting) in the order the source's cells give them."""
        return list(dict.fromkeys((c.group, c.column, c.at) for c in self.source.cells)) if self.source else []

    def source_rows(self) -> list[str]:
        return list(dict.fromkeys(c.source_row for c in self.source.cells)) if self.source else []

    def source_value(self, source_row: str, column: tuple[str | None, str, str | None]) -> str:
        for cell in self.source.cells:
            if (cell.source_row, (cell.group, cell.column, cell.at)) == (source_row, column):
                return f"{cell.value:g}" + (f" {cell.unit}" if cell.unit else "")
        return "–"

    def source_header(self) -> list[str]:
        def label(group: str | None, column: str, at: str | None) -> str:
            text = MEASURE_LABELS.get(column, column)
            return " ".join(part for part in (group, text, f"({at})" if at else None) if part)

        return [f"{self.source.table} ({SOURCE_MARK})"] + [label(*c) for c in self.source_columns()]

    def source_caption(self) -> str:
        shown = f" {SOURCE_MARK} columns above: the source's value for our row" + (f" at {self.source.at}" if self.source.at else "") + "."
        return (f"{SOURCE_MARK} {self.source.work}, {self.source.table}, as published"
                + (f": {self.source.note}" if self.source.note else "") + "." + (shown if any(
                    m.startswith(SOURCE_COLUMN) for _, m in self.layout()) else "")
                + f" Where each number is: {SOURCE_FILE} (`where`).")

    def pending_note(self) -> list[str]:
        return [f"{PENDING}: {self.pending_why}"] if self.pending else []

    def to_markdown(self) -> str:
        header = self.header()
        lines = [f"**{self.caption}**", "", "| " + " | ".join(header) + " |",
                 "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        for row in self.rows:
            cells = []
            for g, m in self.layout():
                text = self.text(row, g, m).replace("|", "\\|")
                cells.append(f"**{text}**" if row in self.best(g, m) else text)
            lines.append("| " + " | ".join([row] + cells) + " |")
        lines += [""] + [f"{note}  " for note in self.pending_note() + self.notes]
        if self.source:
            head = self.source_header()
            while not lines[-1].strip():
                lines.pop()
            lines = lines[:-1] + [lines[-1].rstrip(), "", "| " + " | ".join(head) + " |",
                                  "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
            lines += ["| " + " | ".join([r] + [self.source_value(r, c) for c in self.source_columns()]) + " |"
                      for r in self.source_rows()]
            lines += ["", self.source_caption()]
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        """A standalone page (for `snakemake --report` and browsers): the Markdown table's cells, bold and marks."""
        from html import escape

        header = self.header()
        rows = []
        for row in self.rows:
            cells = []
            for g, m in self.layout():
                text = escape(self.text(row, g, m))
                cells.append(f"<td><b>{text}</b></td>" if row in self.best(g, m) else f"<td>{text}</td>")
            rows.append(f"<tr><th scope=\"row\">{escape(row)}</th>{''.join(cells)}</tr>")
        notes = "".join(f"<p>{escape(note)}</p>" for note in self.pending_note() + self.notes)
        if self.source:
            notes += ("<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in self.source_header()) + "</tr></thead><tbody>"
                      + "".join(f"<tr><th scope=\"row\">{escape(r)}</th>"
                                + "".join(f"<td>{escape(self.source_value(r, c))}</td>" for c in self.source_columns()) + "</tr>"
                                for r in self.source_rows())
                      + f"</tbody></table><p>{escape(self.source_caption())}</p>")
        return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(self.caption[:80]) + "</title>"
                "<style>body{font-family:sans-serif;font-size:14px}table{border-collapse:collapse}"
                "td,th{padding:2px 8px;border-bottom:1px solid #ddd}td{text-align:right}th{text-align:left}</style>"
                f"</head><body><table><caption style=\"text-align:left\"><b>{escape(self.caption)}</b></caption>"
                "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr></thead><tbody>"
                + "".join(rows) + f"</tbody></table>{notes}</body></html>\n")

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["system", "collection", "measure", "value", "significant"])
        for row in self.rows:
            for g in self.groups:
                for m in self.columns:
                    if (row, g, m) in self.pending:
                        writer.writerow([row, g, m, PENDING, ""])
                    elif (row, g, m) in self.cells:
                        writer.writerow([row, g, m, f"{self.cells[(row, g, m)]:.6f}",
                                         int(bool(self.marks.get((row, g, m))))])
                    elif (row, g, m) in self.summaries or (row, m) in self.extras:  # as printed; never tested
                        writer.writerow([row, g, m, self.text(row, g, m), 0])
        for cell in self.source.cells if self.source else ():  # the source's numbers, as published
            writer.writerow([f"{SOURCE_MARK} {cell.source_row}", cell.group or self.groups[0],
                             cell.column + (f" ({cell.at})" if cell.at else ""), f"{cell.value:g}", ""])
        return buffer.getvalue()

    def to_latex(self) -> str:
        layout = self.layout()
        spec = "l" + "r" * len(layout)
        header = self.header(with_group=False)  # a group's name spans its columns
        lines = ["\\begin{table}", "\\centering", f"\\caption{{{_tex(self.caption)}}}", f"\\begin{{tabular}}{{{spec}}}",
                 "\\toprule"]
        if len(self.groups) > 1:
            width = {g: sum(1 for lg, m in layout if lg == g and m not in self.extra_columns) for g in self.groups}
            lines.append(" & " + " & ".join([f"\\multicolumn{{{width[g]}}}{{c}}{{{_tex(g)}}}" for g in self.groups]
                                            + [""] * len(self.extra_columns)) + " \\\\")
        lines.append(f"{_tex(self.row_header)} & " + " & ".join(_tex(h) for h in header[1:]) + " \\\\")
        lines.append("\\midrule")
        for row in self.rows:
            cells = []
            for g, m in self.layout():
                text = self.text(row, g, m)
                text = _tex(text) if m in self.extra_columns else text.replace(PLUS_MINUS, "$\\pm$")
                text = _marks(text).replace("–", "--")
                cells.append(f"\\textbf{{{text}}}" if row in self.best(g, m) else text)
            lines.append(f"{_tex(row)} & " + " & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        notes = self.pending_note() + self.notes
        if notes:
            lines.append("\\par\\footnotesize " + _marks(_tex(" ".join(notes))))
        if self.source:
            columns = self.source_columns()
            lines += ["\\par\\medskip", f"\\begin{{tabular}}{{l{'r' * len(columns)}}}", "\\toprule",
                      " & ".join(_tex(h) for h in self.source_header()) + " \\\\", "\\midrule"]
            lines += [" & ".join([_tex(r)] + [_tex(self.source_value(r, c)).replace("–", "--") for c in columns]) + " \\\\"
                      for r in self.source_rows()]
            lines += ["\\bottomrule", "\\end{tabular}", "\\par\\footnotesize " + _tex(self.source_caption())]
        lines += ["\\end{table}"]
        return "\n".join(lines) + "\n"

    def numbers(self) -> dict:
        """Every number of the table, for storing under results/ and comparing in tests."""
        out: dict[str, dict[str, dict[str, Value | dict]]] = {}
        for (row, g, m), value in self.cells.items():
            out.setdefault(g, {}).setdefault(row, {})[m] = value
        for (row, g, m), (mean, sd, n) in self.summaries.items():
            out.setdefault(g, {}).setdefault(row, {})[m] = {"mean": mean, "sd": None if math.isnan(sd) else sd, "n": n}
        for g in self.groups:
            for (row, column), value in self.extras.items():
                out.setdefault(g, {}).setdefault(row, {})[column] = value
        return out

    def significance(self) -> dict:
        """Each tested cell's marks ("" where no test passed), the row each mark tests against, and the correction:
        what a reader (or `tables index`) needs to say whether a difference is significant."""
        marks: dict[str, dict[str, dict[str, str]]] = {}
        pvalues: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
        for (row, g, m), tests in self.pvalues.items():
            marks.setdefault(g, {}).setdefault(row, {})[m] = self.marks.get((row, g, m), "")
            pvalues.setdefault(g, {}).setdefault(row, {})[m] = {symbol: (None if math.isnan(p) else p) for symbol, p in tests.items()}
        return {"references": dict(self.references), "correction": self.correction, "alpha": self.alpha, "marks": marks,
                "pvalues": pvalues}

    def layout_record(self) -> dict:
        """What the numbers alone do not say: row and column order, notes, summaries, pending cells."""
        return {"groups": self.groups, "measures": self.measures, "rows": self.rows, "row_header": self.row_header,
                "extra_columns": self.extra_columns, "extra_formats": self.extra_formats, "bold_best": self.bold_best,
                "notes": self.notes,
                "summaries": sorted({row for row, _, _ in self.summaries}),
                "pending": [list(cell) for cell in sorted(self.pending)], "pending_why": self.pending_why}

    @classmethod
    def from_document(cls, document: Mapping) -> Table:
        """A table again from its stored numbers (`write_numbers`), to render it anew: with the source's numbers
        beside it, or with cells marked pending."""
        layout = dict(document.get("layout") or {})
        if not layout:
            raise TableError("the numbers document has no layout (row and column order): make it again with `tables results`")
        table = cls(document.get("caption", ""), list(layout["groups"]), list(layout["measures"]),
                    row_header=layout.get("row_header", "System"), bold_best=layout.get("bold_best", True))
        table.notes = list(layout.get("notes", []))
        table.pending = {tuple(cell) for cell in layout.get("pending", [])}
        table.pending_why = layout.get("pending_why", "")
        summaries = set(layout.get("summaries", []))
        numbers = document.get("numbers", {})
        marks = (document.get("significance") or {}).get("marks", {})
        for row in layout["rows"]:
            table.rows.append(row)
            for g in table.groups:
                for column, value in numbers.get(g, {}).get(row, {}).items():
                    if column in table.measures and row in summaries and isinstance(value, Mapping):
                        sd = math.nan if value.get("sd") is None else value["sd"]
                        table.summaries[(row, g, column)] = (value["mean"], sd, value["n"])
                    elif column in table.measures:
                        table.cells[(row, g, column)] = math.nan if value is None else float(value)
                        if marks.get(g, {}).get(row, {}).get(column):
                            table.marks[(row, g, column)] = marks[g][row][column]
                    elif column in layout.get("extra_columns", []):
                        table.extras[(row, column)] = value
        table.extra_columns = [c for c in layout.get("extra_columns", []) if any(col == c for _, col in table.extras)]
        table.extra_formats = dict(layout.get("extra_formats", {}))
        significance = document.get("significance") or {}
        table.references = dict(significance.get("references", {}))
        table.correction = significance.get("correction", "none")
        table.alpha = significance.get("alpha", 0.05)
        return table

    def write(self, stem: str | os.PathLike, formats: Sequence[str] = ("md", "csv")) -> list[Path]:
        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        written = []
        for fmt in formats:
            path = stem.with_suffix(f".{fmt}")
            write_text(path, {"md": self.to_markdown, "csv": self.to_csv, "tex": self.to_latex, "html": self.to_html}[fmt]())
            written.append(path)
        return written


def _marks(text: str) -> str:
    """Significance marks in LaTeX: † and ‡ as superscript daggers (pdflatex has no glyph for either)."""
    return text.replace(SIGNIFICANT, "$^\\dagger$").replace(SECOND_SIGNIFICANT, "$^\\ddagger$")


def _tex(text: str) -> str:
    for char, escaped in (("&", "\\&"), ("%", "\\%"), ("_", "\\_"), ("#", "\\#"), ("→", "$\\rightarrow$"), ("§", "\\S{}")):
        text = text.replace(char, escaped)
    return text


def add_system(table: Table, row: str, group: str, evaluation: Evaluation,
               baseline: Evaluation | None = None, alpha: float = 0.05, second: Evaluation | None = None) -> None:
    """Add one system's aggregate values; mark cells that differ from `baseline` (and `second`: ‡) at p < alpha,
    uncorrected (`Table.correct` redoes the marks with a correction once every system is in)."""
    for measure in table.measures:
        if measure not in evaluation.aggregate:
            continue
        mark, tests = "", {}
        for reference, symbol in ((baseline, SIGNIFICANT), (second, SECOND_SIGNIFICANT)):
            if reference is not None and measure in reference.per_query:
                _, p, _ = paired_ttest(evaluation.per_query[measure], reference.per_query[measure])
                tests[symbol] = p
                mark += symbol if p < alpha else ""
        table.add(row, group, measure, evaluation.aggregate[measure], mark)
        if tests:
            table.pvalues[(row, group, measure)] = tests


def stats_table(stats: Mapping[str, Mapping[str, float]], caption: str) -> Table:
    """Dataset statistics: one row per collection."""
    columns = ["docs", "queries", "judged_queries", "qrels", "mean_relevant_per_query", "mean_doc_length_words"]
    table = Table(caption, ["statistics"], columns, bold_best=False,
                  number_format=lambda column, value: f"{value:.2f}" if column.startswith("mean") else f"{int(value)}")
    for collection, values in stats.items():
        for column in columns:
            if values.get(column) is not None:
                table.add(collection, "statistics", column, float(values[column]))
    return table


def stats_markdown(table: Table) -> str:
    """Counts as integers, means with two decimals."""
    header = ["Collection", "Docs", "Queries", "Judged queries", "Qrels", "Rel./query", "Doc length (words)"]
    lines = [f"**{table.caption}**", "", "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for row in table.rows:
        cells = []
        for column in table.measures:
            value = table.cells.get((row, "statistics", column))
            cells.append("–" if value is None else (f"{value:.2f}" if column.startswith("mean") else f"{int(value)}"))
        lines.append("| " + " | ".join([row] + cells) + " |")
    return "\n".join(lines + [""] + [f"{note}  " for note in table.notes]).rstrip() + "\n"


def json_value(path: str | os.PathLike, key: str, cache: dict[str, object] | None = None) -> Value:
    """The number or string at dotted `key` of a JSON file (list items by index); TableError naming both if absent."""
    cache = {} if cache is None else cache
    if str(path) not in cache:
        try:
            cache[str(path)] = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise TableError(f"{path}: no such file (wanted key {key!r})") from None
        except (OSError, json.JSONDecodeError) as err:
            raise TableError(f"{path}: cannot read it as JSON ({err}; wanted key {key!r})") from None
    node = cache[str(path)]
    parts = key.split(".")
    for i, part in enumerate(parts):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            found = f"; it has {', '.join(map(str, node))}" if isinstance(node, dict) else ""
            raise TableError(f"{path}: no key {key!r} (missing {'.'.join(parts[:i + 1])!r}{found})")
    if isinstance(node, dict | list):
        raise TableError(f"{path}: key {key!r} holds a {type(node).__name__}, not a number or string")
    return str(node).lower() if isinstance(node, bool) else node


def parse_value_specs(values: Sequence[str], formats: Sequence[str]) -> tuple[list[tuple[str, str, Value]], dict[str, str], list[str]]:
    """`--value ROW:COLUMN:JSON_FILE:KEY` and `--value-format COLUMN:SPEC`: the cells, the formats, the files read.

    Everything is checked here, before any output is written."""
    cells, files, cache = [], [], {}
    for spec in values:
        row, _, rest = spec.partition(":")
        column, _, rest = rest.partition(":")
        path, _, key = rest.rpartition(":")
        if not (row and column and path and key):
            raise TableError(f"--value {spec!r}: expected ROW:COLUMN:JSON_FILE:KEY")
        cells.append((row, column, json_value(path, key, cache)))
        files.append(path)
    specs = {}
    for spec in formats:
        column, _, fmt = spec.rpartition(":")
        if not column or not fmt:
            raise TableError(f"--value-format {spec!r}: expected COLUMN:SPEC (e.g. 'pairs/s:,.0f')")
        if column not in {c for _, c, _ in cells}:
            raise TableError(f"--value-format {spec!r}: no --value fills column {column!r}")
        specs[column] = fmt
    for row, column, value in cells:
        if column in specs and isinstance(value, int | float):
            try:
                format(value, specs[column])
            except ValueError as err:
                raise TableError(f"--value-format {column}:{specs[column]}: cannot format {value!r} of row {row!r} ({err})") from None
    return cells, specs, files


def parse_summary_spec(spec: str) -> tuple[str, list[str]]:
    """`--summary-row LABEL:ROW1|ROW2|...` (row labels may hold commas: "MiniLM-L6, seed 2")."""
    label, _, rows = spec.partition(":")
    names = [r.strip() for r in rows.split("|") if r.strip()]
    if not label or not names:
        raise TableError(f"--summary-row {spec!r}: expected LABEL:ROW1|ROW2|...")
    return label, names


def write_numbers(table: Table, path: str | os.PathLike, provenance: Mapping,
                  machine_dependent: Sequence[str] = ()) -> None:
    """Store a table's numbers with what produced them (command, commit, versions, checksums).

    `machine_dependent` columns (timings) are stored but not compared with a reference."""
    document = {"caption": table.caption, "provenance": dict(provenance), "numbers": table.numbers(),
                "layout": table.layout_record()}
    if table.pvalues:
        document["significance"] = table.significance()
    if Path(path).name != "resources.json":  # what the run that made these numbers cost, beside them
        document["provenance"]["resources"] = str(Path(path).with_name("resources.json"))
    if machine_dependent:
        document["machine_dependent"] = sorted(machine_dependent)
    write_json(path, document, indent=1, sort_keys=True, ensure_ascii=False)


def per_query_difference_figure(entries: Sequence[tuple[str, str, Evaluation]], baseline_row: str,
                                path: str | os.PathLike, measure: str = "AP@1000") -> dict[str, str]:
    """Per collection, the best row's per-query `measure` minus the baseline's, sorted: where it helps and hurts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(g for g, _, _ in entries))
    best: dict[str, tuple[str, Evaluation]] = {}
    baselines: dict[str, Evaluation] = {}
    for group, row, evaluation in entries:
        if row == baseline_row:
            baselines[group] = evaluation
        elif group not in best or evaluation.aggregate[measure] > best[group][1].aggregate[measure]:
            best[group] = (row, evaluation)
    groups = [g for g in groups if g in best and g in baselines]
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(4.2 * max(len(groups), 1), 3.4), squeeze=False)
    for ax, group in zip(axes[0], groups):
        row, evaluation = best[group]
        base = baselines[group].per_query[measure]
        deltas = sorted(evaluation.per_query[measure][q] - base[q] for q in base if q in evaluation.per_query[measure])
        colours = ["#2b8cbe" if d > 0 else "#e34a33" if d < 0 else "#999999" for d in deltas]
        ax.bar(range(len(deltas)), deltas, width=1.0, color=colours)
        ax.axhline(0, color="black", linewidth=0.6)
        wins, losses = sum(d > 0 for d in deltas), sum(d < 0 for d in deltas)
        ax.set_title(f"{group}\n{row}", fontsize=9)
        ax.set_xlabel(f"queries (sorted); {wins} better, {losses} worse", fontsize=8)
        ax.set_ylabel(f"{MEASURE_LABELS.get(measure, measure)} - {baseline_row}", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return {group: best[group][0] for group in groups}


LEARNED_MARGIN = 0.05  # held-out loss this far below the label prior before a note says a checkpoint learned


def learned(validation: Mapping) -> bool:
    """Held-out loss more than LEARNED_MARGIN below the label prior (less is noise: 0.371 vs 0.377 is not learning)."""
    return validation["loss"] < (1 - LEARNED_MARGIN) * validation["prior_loss"]


def checkpoint_note(label: str, meta: Mapping) -> str:
    """How far a fine-tuned checkpoint got below the label prior on its held-out queries."""
    v = meta.get("validation")
    sources = " + ".join(source["name"] for source in meta.get("sources", []))
    if not v:
        return f"{label}: trained on {sources}, {meta.get('steps')} steps, no held-out validation."
    gap = (v["prior_loss"] - v["loss"]) / v["prior_loss"]
    if learned(v):
        against = f"{gap:.0%} below it"
    elif gap > 0:
        against = f"{gap:.0%} below it, within the {LEARNED_MARGIN:.0%} margin: it did not learn"
    else:
        against = f"{-gap:.0%} above it: it did not learn"
    return (f"{label}: held-out loss {v['loss']:.3f} at step {v['selected_step']} of {meta.get('steps')} "
            f"({v['select']} on validation), label prior {v['prior_loss']:.3f} "
            f"({against}), "
            f"untrained head {v['untrained_loss']:.3f}; held-out MRR "
            f"{v.get('untrained_mrr', math.nan):.3f} -> {v.get('mrr', math.nan):.3f}; {v['pairs']} held-out pairs of {sources}'s training "
            f"queries; {meta.get('pairs')} training pairs, {meta.get('dtype', 'float32')}.")


def folds_note(label: str, metas: Sequence[Mapping]) -> str:
    """Checkpoints trained per fold: their mean held-out loss against the mean label prior."""
    checked = [m["validation"] for m in metas if m.get("validation")]
    steps = sorted({m.get("steps") for m in metas})
    if not checked:
        return f"{label}: {len(metas)} folds, {'/'.join(map(str, steps))} steps, no held-out validation."
    loss = sum(v["loss"] for v in checked) / len(checked)
    prior = sum(v["prior_loss"] for v in checked) / len(checked)
    below = sum(map(learned, checked))
    return (f"{label}: {len(metas)} folds, {'/'.join(map(str, steps))} steps; held-out loss {loss:.3f} (mean), "
            f"label prior {prior:.3f}; more than {LEARNED_MARGIN:.0%} below the prior (learned) on {below} of "
            f"{len(checked)} folds.")


def pretraining_table(specs: Sequence[str], caption: str) -> Table:
    """Rows: pre-trained checkpoints; cells: held-out token accuracy (mlm) or loss, before and after."""
    table = Table(caption, ["held-out"], ["before", "after", "loss"], row_header="Pre-training", bold_best=False)
    for spec in specs:
        label, path = spec.split(":", 1)
        meta = json.loads(Path(path).read_text())
        v = meta.get("validation") or {}
        metric = "accuracy" if "accuracy" in v else "mrr"
        table.add(label, "held-out", "before", v.get(f"untrained_{metric}", math.nan))
        table.add(label, "held-out", "after", v.get(metric, math.nan))
        table.add(label, "held-out", "loss", v.get("loss", math.nan))
    return table


# A job's timestamp line in a Snakemake log, without its line end (callers add `$` or `\n`), and how to
# read it (local time, as Snakemake writes it).
LOG_STAMP = r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]"
# A Snakemake log's start, near its top (local time, as "YYYY-mm-dd HH:MM:SS...").
LOG_DATE = r"^\s*Date: (.+)$"


def _stamp_seconds(stamp: str) -> float:
    import time

    return time.mktime(time.strptime(stamp, "%a %b %d %H:%M:%S %Y"))


def wall_clock(log: str | os.PathLike) -> dict | None:
    """Start, wall-clock seconds and jobs of a finished Snakemake run, from its log; None if it ran no job."""
    return _finished_wall_clock(Path(log).read_text(encoding="utf-8", errors="replace"), Path(log).name)


def _log_start(text: str) -> str | None:
    import re

    started = re.search(LOG_DATE, text, re.M)
    return started.group(1).strip() if started else None


def _finished_wall_clock(text: str, name: str) -> dict | None:
    import re

    started = _log_start(text)
    elapsed = re.search(r"^Elapsed time: (?:(\d+) days?, )?(\d+):(\d+):([\d.]+)$", text, re.M)
    done = re.findall(r"^(\d+) of (\d+) steps \(100%\) done$", text, re.M)
    if not (started and elapsed and done):
        return None
    days, hours, minutes, seconds = (float(x) if x else 0.0 for x in elapsed.groups())
    return {"started": started, "wall_clock_seconds": round(((days * 24 + hours) * 60 + minutes) * 60 + seconds, 1),
            "jobs": int(done[-1][1]), "snakemake_log": name}


def run_wall_clock(logs: Sequence[str | os.PathLike]) -> dict:
    """The wall clock of a run made in stretches, one Snakemake log each (stopped and resumed, e.g. across
    sessions): each stretch from its start (the log's Date) to its end (its elapsed time when it finished, else
    its last timestamp), added up; the pauses between stretches do not count. The run must have finished: its
    last stretch that ran a job reached 100%."""
    import re
    import time

    stretches = []
    for log in logs:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
        finished = _finished_wall_clock(text, Path(log).name)
        if finished:
            started, seconds = finished["started"], finished["wall_clock_seconds"]
        else:  # stopped: from its start to its last job stamp
            started, stamps = _log_start(text), re.findall(LOG_STAMP + "$", text, re.M)
            seconds = 0.0
            if started and stamps:
                begin = time.mktime(time.strptime(started[:19], "%Y-%m-%d %H:%M:%S"))
                seconds = max(0.0, _stamp_seconds(stamps[-1]) - begin)
        stretches.append({"snakemake_log": Path(log).name, "started": started,
                          "seconds": round(seconds, 1), "jobs": len(re.findall(r"^Finished jobid: ", text, re.M)),
                          "finished": finished is not None})
    stretches.sort(key=lambda s: s["started"] or "")
    working = [s for s in stretches if s["jobs"]]
    if not working:
        raise TableError(f"no finished job in {', '.join(map(str, logs))}")
    if not working[-1]["finished"]:
        raise TableError(f"{working[-1]['snakemake_log']}: the run's last stretch stopped before 100% (resume it, "
                         "then time it): no wall clock for an unfinished run")
    return {"started": working[0]["started"], "wall_clock_seconds": round(sum(s["seconds"] for s in stretches), 1),
            "jobs": sum(s["jobs"] for s in stretches), "stretches": stretches,
            "snakemake_logs": [s["snakemake_log"] for s in stretches]}


def job_spans(log: str | os.PathLike) -> list[dict]:
    """The finished jobs of a Snakemake log: start and end (epoch seconds), rule, and the job's block of
    text (its output and wildcards), in order of start."""
    import re

    text = Path(log).read_text(encoding="utf-8", errors="replace")
    stamp = LOG_STAMP + r"\n"
    started = {m.group(3): (_stamp_seconds(m.group(1)), m.group(2), m.group(0))
               for m in re.finditer(stamp + r"(?:local)?rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)\n(?:    .*\n)*", text, re.M)}
    spans = []
    for m in re.finditer(stamp + r"Finished jobid: (\d+) \(Rule: (\w+)\)", text, re.M):
        if m.group(2) in started:
            start, rule, block = started[m.group(2)]
            spans.append({"start": start, "end": _stamp_seconds(m.group(1)), "rule": rule, "text": block})
    return sorted(spans, key=lambda span: span["start"])


def part_wall_clock(logs: Sequence[str | os.PathLike], match: str) -> dict:
    """The wall clock of one part of a run, over one or more Snakemake logs (a run stopped and resumed):
    the union of the time spans of the finished jobs whose block (rule, outputs, wildcards) matches the regular
    expression `match`, so that time when none of them ran (other parts, pauses) does not count. `job_seconds`
    adds the spans up (more than the wall clock where jobs ran side by side)."""
    import re

    spans = [s for log in logs for s in job_spans(log) if re.search(match, s["text"])]
    if not spans:
        raise TableError(f"no finished job mentions {match!r} in {', '.join(map(str, logs))}")
    covered, end = 0.0, -math.inf
    for span in sorted(spans, key=lambda s: s["start"]):
        covered += max(0.0, span["end"] - max(span["start"], end))
        end = max(end, span["end"])
    rules: dict[str, int] = {}
    for span in spans:
        rules[span["rule"]] = rules.get(span["rule"], 0) + 1
    return {"part": match, "wall_clock_seconds": round(covered, 1), "job_seconds": round(sum(s["end"] - s["start"] for s in spans), 1),
            "jobs": len(spans), "jobs_by_rule": dict(sorted(rules.items())), "snakemake_logs": [Path(log).name for log in logs]}


# Stages in the order a run reaches them; a stage not listed sorts after them.
STAGE_ORDER = ("export", "folds", "index", "retrieve", "evaluate", "segment", "train", "score", "join", "fuse",
               "aggregate", "speed", "tables", "figures", "compare")
RESOURCE_COLUMNS = ("jobs", "time (s)", "CPU time (s)", "max RSS (MiB)")
RESOURCE_EXTRAS = ("pairs/s", "GPU", "GPU peak (MiB)", "GPU energy (J)")
def resource_subject(stage: str, name: str, groups: Sequence[str] = ()) -> str:
    """The table's second key: the collection for per-collection stages, the checkpoint for train, one row
    for the checkpoints a paper generates per fold or row (`groups`: their prefixes, e.g. "radboud-")."""
    if stage in ("tables", "figures", "compare"):
        return "all"
    if stage == "train":
        return next((f"{prefix}*" for prefix in groups if name.startswith(prefix)), name)
    return name.split(".")[0]


def resource_metas(work_dir: str | os.PathLike, groups: Sequence[str] = ()) -> dict[Path, tuple[str, str, dict]]:
    """Path -> (stage, subject, meta) of every checkpoint and score run under a run's work folder; score
    parts count once, through their gathered meta."""
    work = Path(work_dir)
    found = {path: ("train", resource_subject("train", path.parent.name, groups), json.loads(path.read_text()))
             for path in sorted(work.glob("checkpoints/*/reranker.json"))}
    for path in sorted(work.glob("scores/*/**/*.meta.json")):
        meta = json.loads(path.read_text())
        if meta.get("part", "1/1") == "1/1":
            found[path] = ("score", path.relative_to(work / "scores").parts[0], meta)
    return found


def resources_table(jobs: Sequence, metas: Sequence[tuple[str, str, dict]], machine: Mapping[str, Any],
                    caption: str, wall_clock: float | None = None, groups: Sequence[str] = ()) -> Table:
    """Stage x collection: jobs, time, CPU time and peak memory from Snakemake's benchmarks; pairs/s and
    the GPU's name, peak memory and energy from the stages' metas; a sum row; notes on the wall clock."""
    from reranker.formats.benchmarks import busy_seconds
    from reranker.hardware import combine_usage

    by_stage: dict[tuple[str, str], list] = {}
    for job in jobs:
        by_stage.setdefault((job.stage, resource_subject(job.stage, job.name, groups)), []).append(job)
    order = lambda key: (STAGE_ORDER.index(key[0]) if key[0] in STAGE_ORDER else len(STAGE_ORDER), key)  # noqa: E731
    integer = lambda column, value: f"{value:,.0f}" if column != "time (s)" or value >= 10 else f"{value:.1f}"  # noqa: E731
    table = Table(caption, ["resources"], list(RESOURCE_COLUMNS), row_header="Stage · collection", bold_best=False,
                  number_format=integer)
    by_key: dict[tuple[str, str], list[dict]] = {}
    for stage, subject, meta in metas:
        by_key.setdefault((stage, subject), []).append(meta)

    def add_row(row: str, members: Sequence, key_metas: Sequence[dict], rate: bool = True) -> None:
        rss = [job.max_rss_mib for job in members if job.max_rss_mib is not None]
        cpu = [job.cpu_seconds for job in members if job.cpu_seconds is not None]
        values = {"jobs": len(members), "time (s)": sum(job.seconds for job in members),
                  "CPU time (s)": sum(cpu) if cpu else math.nan, "max RSS (MiB)": max(rss) if rss else math.nan}
        for column, value in values.items():
            table.add(row, "resources", column, float(value))
        rates = [(meta["throughput"]["pairs_per_second"], meta.get("seconds") or 0) if "throughput" in meta
                 else (meta["pairs"] / meta["seconds"] if meta.get("seconds") else None, meta.get("seconds") or 0)
                 for meta in key_metas]
        rates = [(rate, seconds) for rate, seconds in rates if rate is not None and seconds]
        pairs_rate = sum(r * seconds for r, seconds in rates) / sum(seconds for _, seconds in rates) if rates and rate else "–"
        usage = combine_usage([meta.get("device_usage") for meta in key_metas]) if key_metas else None
        table.add_value(row, "pairs/s", round(pairs_rate, 1) if isinstance(pairs_rate, float) else pairs_rate)
        table.add_value(row, "GPU", usage["gpu"] if usage else "–")
        table.add_value(row, "GPU peak (MiB)", usage["gpu_peak_memory_mib"] if usage else "–")
        table.add_value(row, "GPU energy (J)", usage["gpu_energy_joules"] if usage else "–")

    for key in sorted(by_stage, key=order):
        add_row(f"{key[0]} · {key[1]}", by_stage[key], by_key.get(key, []))
    add_row("sum", list(jobs), [meta for _, _, meta in metas], rate=False)  # pairs of train and score do not add
    table.extra_formats.update({"pairs/s": ",.1f", "GPU peak (MiB)": ",.0f", "GPU energy (J)": ",.0f"})
    busy = busy_seconds(list(jobs))
    total = sum(job.seconds for job in jobs)
    table.notes.append(f"Machine: {machine['cpu']} ({machine['threads']} threads, bf16 "
                       f"{'yes' if machine['cpu_bf16'] else 'no'}); GPU: {machine['gpu']}.")
    table.notes.append(f"Time, CPU time and max RSS are Snakemake's `benchmark:` of each job (benchmarks/<stage>/); "
                       f"pairs/s and GPU fields come from the train and score stages' meta files (\"none\": no GPU). "
                       f"The sum row adds the jobs' times ({total / 60:.1f} min); jobs that ran side by side make it "
                       f"exceed the wall clock during which any job ran: {busy / 60:.1f} min.")
    if wall_clock is not None:
        rest = wall_clock - busy
        table.notes.append(f"The run's measured wall clock (Snakemake's logs, numbers/run.json): {wall_clock / 60:.1f} min; "
                           f"the jobs cover {busy / wall_clock:.0%} of it. The rest, {rest / 60:.1f} min, is Snakemake's "
                           "start-up (parsing, DAG and checksums) and the gaps between a job's end and the next one's start.")
    return table


def main_resources(argv: list[str]) -> int:
    """The resources table of a run folder: what every stage cost, from Snakemake's benchmarks."""
    parser = argparse.ArgumentParser(prog="python -m reranker tables resources",
                                     description="time, memory, pairs/s and GPU use per stage and collection of one run")
    parser.add_argument("--run-dir", required=True, help="the run folder: its benchmarks/ and work/ are read")
    parser.add_argument("--wall-clock", help="numbers/run.json of the finished run (`tables wallclock`): compared with the jobs' time")
    parser.add_argument("--caption", default="What every stage cost")
    parser.add_argument("--checkpoint-groups", nargs="*", default=[], metavar="PREFIX",
                        help="one row for all train jobs of checkpoints named PREFIX... (a paper's per-fold ones)")
    parser.add_argument("--out", required=True, help="output path without suffix")
    parser.add_argument("--formats", nargs="+", default=["md", "csv"], choices=["md", "csv", "tex", "html"])
    parser.add_argument("--numbers", help="also store every number with its provenance (JSON)")
    parser.add_argument("--command", default="", help="the command that produced the table, for provenance")
    args = parser.parse_args(argv)
    from reranker.formats.benchmarks import read_benchmarks
    from reranker.hardware import machine

    run_dir = Path(args.run_dir)
    jobs = read_benchmarks(run_dir / "benchmarks")
    if not jobs:
        raise TableError(f"{run_dir / 'benchmarks'}: no job benchmarks (run the workflow first)")
    wall_clock = json.loads(Path(args.wall_clock).read_text())["wall_clock_seconds"] if args.wall_clock else None
    metas = resource_metas(run_dir / "work", args.checkpoint_groups)
    table = resources_table(jobs, list(metas.values()), machine(), args.caption, wall_clock, args.checkpoint_groups)
    written = table.write(args.out, args.formats)
    if args.numbers:
        columns = list(RESOURCE_COLUMNS) + list(RESOURCE_EXTRAS)
        # the models whose training and scoring the rows time, as in the results tables' provenance
        models = {str(path): {key: meta[key] for key in ("checkpoint", "fingerprint", "kind", "precision") if key in meta}
                  for path, (_, _, meta) in metas.items()}
        extra = {"benchmarks": len(jobs), "machine": machine(), "models": models}
        inputs = [str(job.path) for job in jobs] + [str(path) for path in metas] + ([args.wall_clock] if args.wall_clock else [])
        write_numbers(table, args.numbers, provenance(args.command, inputs, extra), machine_dependent=columns)
        written.append(Path(args.numbers))
    for path in written:
        print(path)
    return 0


def main_rerender(argv: list[str]) -> int:
    """A stored table rendered anew from its numbers JSON: the source's numbers beside it, cells marked pending."""
    parser = argparse.ArgumentParser(prog="python -m reranker tables rerender", description=main_rerender.__doc__)
    parser.add_argument("--numbers", required=True, help="the table's numbers JSON (results/numbers/<table>.json); its layout is added")
    parser.add_argument("--out", required=True, help="output path without suffix (its .md gives the layout of older numbers)")
    parser.add_argument("--formats", nargs="+", default=["md", "csv"], choices=["md", "csv", "tex", "html"])
    parser.add_argument("--sources", help="the sources' numbers (workflow/config/source_numbers.yaml)")
    parser.add_argument("--source-table", help="the table's id there (default: the numbers file's stem)")
    parser.add_argument("--measures", nargs="+", metavar="MEASURE",
                        help="the measure columns in this order; one the stored run did not compute has every cell pending")
    parser.add_argument("--pending", action="append", default=[], metavar="GROUP:ROW_GLOB:MEASURE",
                        help="cells no longer valid (fnmatch globs), printed 'pending'")
    parser.add_argument("--pending-why", default="", help="why they are pending, and what replaces them")
    args = parser.parse_args(argv)
    import fnmatch

    path = Path(args.numbers)
    document = json.loads(path.read_text(encoding="utf-8"))
    table = Table.from_document(document)
    if args.measures:
        unknown = [m for m in args.measures if m not in table.measures]
        dropped = [m for m in table.measures if m not in args.measures]
        if dropped:
            raise TableError(f"--measures leaves out stored measures: {', '.join(dropped)}")
        table.measures = list(args.measures)
        summaries = {row for row, _, _ in table.summaries}
        table.pending |= {(r, g, m) for m in unknown for r in table.rows for g in table.groups if r not in summaries}
    for spec in args.pending:
        group, row, measure = spec.rsplit(":", 2) if spec.count(":") >= 2 else (None, None, None)
        if group is None:
            raise TableError(f"--pending {spec!r}: expected GROUP:ROW_GLOB:MEASURE")
        table.pending |= {(r, g, m) for r in table.rows for g in table.groups for m in table.measures
                          if fnmatch.fnmatchcase(g, group) and fnmatch.fnmatchcase(r, row) and fnmatch.fnmatchcase(m, measure)}
    if args.pending_why:
        table.pending_why = args.pending_why
    if args.sources:
        table.source = read_source_numbers(args.sources).get(args.source_table or path.stem)
    written = table.write(args.out, args.formats)
    document["layout"] = table.layout_record()
    write_json(path, document, indent=1, sort_keys=True, ensure_ascii=False)
    for item in written + [path]:
        print(item)
    return 0


def main_index(argv: list[str]) -> int:
    """The run's README: every seed table of the three works, our file, its command, and whether the effect held."""
    from reranker.claims import index, load_seeds

    parser = argparse.ArgumentParser(prog="python -m reranker tables index", description=main_index.__doc__)
    parser.add_argument("--run-dir", required=True, help="the run folder: its numbers/, tables/ and figures/ are read")
    parser.add_argument("--seeds", required=True, help="the seed tables and their claims (workflow/config/seed_tables.yaml)")
    parser.add_argument("--out", required=True, help="the README to write (e.g. <run-dir>/README.md)")
    parser.add_argument("--command", default="", help="the command that made the run, named in the README")
    parser.add_argument("--sources", help="the sources' numbers (default: source_numbers.yaml beside --seeds)")
    args = parser.parse_args(argv)
    text = index(load_seeds(args.seeds, args.sources), Path(args.run_dir), args.command)  # a ClaimError is an input error: main reports it
    write_text(args.out, text)
    print(args.out)
    return 0


@exits_on_input_error("tables")
def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["wallclock"]:
        return main_wall_clock(argv[1:])
    if argv[:1] == ["resources"]:
        return main_resources(argv[1:])
    if argv[:1] == ["index"]:
        return main_index(argv[1:])
    if argv[:1] == ["rerender"]:
        return main_rerender(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m reranker tables",
                                     description="Tables from saved evaluations (reranker.evaluate JSON) or statistics.")
    sub = parser.add_subparsers(dest="kind", required=True)
    results = sub.add_parser("results", help="systems x collections x measures, with significance marks")
    results.add_argument("--eval", nargs="+", required=True, metavar="GROUP:ROW:EVAL.json",
                         help="one saved evaluation per cell: column group (e.g. a collection) and row (e.g. a system)")
    results.add_argument("--row-header", default="System")
    results.add_argument("--no-bold", action="store_true", help="do not bold the best row per column")
    results.add_argument("--baseline-row", help="row that significance is tested against (per collection)")
    results.add_argument("--second-baseline-row", help="a second such row, marked ‡")
    results.add_argument("--alpha", type=float, default=0.05, help="significance level of the marks")
    results.add_argument("--correction", choices=list(CORRECTIONS), default="none",
                         help="multiple-testing correction over each column's tests against one reference row")
    results.add_argument("--measures", nargs="+", required=True, help="the columns of each group (config: measures)")
    results.add_argument("--figure", help="also plot per-query AP differences of the best row against the baseline")
    results.add_argument("--meta", nargs="*", default=[],
                         help="score/checkpoint meta JSON files whose model fingerprints go into the provenance")
    results.add_argument("--checkpoints", nargs="*", default=[], metavar="LABEL:reranker.json",
                         help="fine-tuned checkpoints: a note per checkpoint on its held-out loss against the label prior")
    results.add_argument("--value", action="append", default=[], metavar="ROW:COLUMN:JSON_FILE:KEY",
                         help="an extra column after the measures: the number or string at dotted KEY of JSON_FILE "
                              "(e.g. validation.loss), for ROW in every group; never tested or bolded")
    results.add_argument("--value-format", action="append", default=[], metavar="COLUMN:SPEC",
                         help="Python format spec of an extra column's numbers (e.g. ',.0f'); default .4f, ints as ints")
    results.add_argument("--machine-column", action="append", default=[], metavar="COLUMN",
                         help="an extra column measured on this machine (a speed): stored, never compared with a reference")
    results.add_argument("--summary-row", action="append", default=[], metavar="LABEL:ROW1|ROW2|...",
                         help="a row of mean ± sample standard deviation over the listed rows (e.g. seeds)")
    stats = sub.add_parser("stats", help="dataset statistics from `collections export` stats.json files")
    stats.add_argument("--stats", nargs="+", required=True, metavar="COLLECTION:STATS.json")
    pretraining = sub.add_parser("pretraining", help="held-out token accuracy (mlm) or loss (nsp) of pre-trained checkpoints")
    pretraining.add_argument("--checkpoints", nargs="+", required=True, metavar="LABEL:reranker.json")
    for command in (results, stats, pretraining):
        command.add_argument("--caption", default="")
        command.add_argument("--note", action="append", default=[], help="a line under the table")
        command.add_argument("--out", required=True, help="output path without suffix")
        command.add_argument("--formats", nargs="+", default=["md", "csv"], choices=["md", "csv", "tex", "html"])
        command.add_argument("--numbers", help="also store every number with its provenance (JSON)")
        command.add_argument("--command", default="", help="the command that produced the table, for provenance")
        command.add_argument("--sources", help="the sources' numbers (workflow/config/source_numbers.yaml), shown beside ours")
        command.add_argument("--source-table", help="the table's id in --sources (default: --out's name)")
    from reranker.figures import add_figure_parsers, run_figure

    add_figure_parsers(sub)
    args = parser.parse_args(argv)
    if args.kind == "figure":
        written = run_figure(args)
    else:
        written = write_table(args)
    for path in written:
        print(path)
    return 0


def write_table(args: argparse.Namespace) -> list[Path]:
    """The `results`, `stats` and `pretraining` subcommands: the table's files, and its numbers with provenance."""
    inputs: list[str] = []
    if args.kind == "results":
        values, value_formats, value_files = parse_value_specs(args.value, args.value_format)  # before writing anything
        summaries = [parse_summary_spec(spec) for spec in args.summary_row]
        inputs += value_files
        entries = []
        for spec in args.eval:
            group, row, path = spec.split(":", 2)
            evaluation = read_evaluation(path)
            entries.append((group, row, evaluation))
            inputs += [path] + [p for p in evaluation.source.values() if Path(p).exists()]
        groups = list(dict.fromkeys(g for g, _, _ in entries))
        table = Table(args.caption, groups, args.measures, row_header=args.row_header, bold_best=not args.no_bold)
        baselines = {g: e for g, r, e in entries if r == args.baseline_row}
        seconds = {g: e for g, r, e in entries if r == args.second_baseline_row}
        table.references = {symbol: row for symbol, row in ((SIGNIFICANT, args.baseline_row),
                                                             (SECOND_SIGNIFICANT, args.second_baseline_row)) if row}
        for group, row, evaluation in entries:
            add_system(table, row, group, evaluation, baselines.get(group) if row != args.baseline_row else None,
                       alpha=args.alpha, second=seconds.get(group) if row not in (args.second_baseline_row, args.baseline_row) else None)
        table.correct(args.correction, args.alpha)
        for label, rows in summaries:
            table.add_summary(label, rows)
        for row, column, value in values:
            table.add_value(row, column, value)
        table.extra_formats.update(value_formats)
        if args.baseline_row:
            table.notes.append(f"{SIGNIFICANT} p < {args.alpha:g}, two-sided paired t-test against {args.baseline_row}"
                               + (f"; {SECOND_SIGNIFICANT} against {args.second_baseline_row}" if args.second_baseline_row else "")
                               + f"; {CORRECTIONS[args.correction].phrase}.")
        if args.figure:
            chosen = per_query_difference_figure(entries, args.baseline_row, args.figure)
            table.notes.append(f"Per-query AP differences of the best rows ({', '.join(f'{g}: {r}' for g, r in chosen.items())}): "
                               f"{Path(args.figure).name}.")
    elif args.kind == "pretraining":
        table = pretraining_table(args.checkpoints, args.caption)
        inputs += [spec.split(":", 1)[1] for spec in args.checkpoints]
    else:
        collected = {}
        for spec in args.stats:
            group, path = spec.split(":", 1)
            collected[group] = json.loads(Path(path).read_text())
            inputs.append(path)
        table = stats_table(collected, args.caption)
    table.notes += args.note
    if args.sources:
        table.source = read_source_numbers(args.sources).get(args.source_table or Path(args.out).name)
        inputs.append(args.sources)
    trained: dict[str, list[dict]] = {}
    for spec in getattr(args, "checkpoints", []) if args.kind == "results" else []:
        label, path = spec.split(":", 1)
        trained.setdefault(label, []).append(json.loads(Path(path).read_text()))
        inputs.append(path)
    for label, metas in trained.items():  # one checkpoint per label, or one per fold (a summary)
        table.notes.append(checkpoint_note(label, metas[0]) if len(metas) == 1 else folds_note(label, metas))
    written = table.write(args.out, [f for f in args.formats if not (args.kind == "stats" and f == "md")])
    if args.kind == "stats" and "md" in args.formats:
        md = Path(args.out).with_suffix(".md")
        write_text(md, stats_markdown(table))
        written.append(md)
    if args.numbers:
        extra = {}
        if getattr(args, "meta", None):
            models = {}
            for path in args.meta:
                meta = json.loads(Path(path).read_text())
                models[str(path)] = {key: meta[key] for key in ("checkpoint", "fingerprint", "kind", "precision") if key in meta}
            extra["models"] = models
        if args.kind == "pretraining":  # the pre-trained checkpoints' fingerprints, as for fine-tuned ones
            for spec in args.checkpoints:
                label, path = spec.split(":", 1)
                trained.setdefault(label, []).append(json.loads(Path(path).read_text()))
        if trained:
            fields = ("fingerprint", "steps", "pairs", "validation", "precision", "seconds")
            extra["checkpoints"] = {label: [{key: meta.get(key) for key in fields} for meta in metas]
                                    if len(metas) > 1 else {key: metas[0].get(key) for key in fields}
                                    for label, metas in trained.items()}
        write_numbers(table, args.numbers, provenance(args.command, sorted(set(inputs)), extra),
                      getattr(args, "machine_column", ()))
        written.append(Path(args.numbers))
    return written


def main_wall_clock(argv: list[str]) -> int:
    """Record a finished run's wall clock, with the machine it ran on, beside the numbers it made."""
    parser = argparse.ArgumentParser(prog="python -m reranker tables wallclock",
                                     description="the wall clock of a finished Snakemake run, from its log")
    parser.add_argument("--log", required=True, action="append",
                        help=".snakemake/log/*.snakemake.log of the run; one per stretch of a resumed run (runs/<profile>/logs/)")
    parser.add_argument("--part", metavar="REGEX",
                        help="time only the jobs whose rule, outputs or wildcards match this regular expression "
                             "(e.g. 'radboud|segment_documents'), over every --log")
    parser.add_argument("--out", required=True, help="JSON to write (kept as it is when the run did no job)")
    parser.add_argument("--command", default="", help="the command that was timed")
    args = parser.parse_args(argv)
    if args.part:
        try:
            timing = part_wall_clock(args.log, args.part)
        except TableError as err:  # e.g. a rerun with nothing to do: the timed run's record stays
            print(f"{err}; {args.out} kept", file=sys.stderr)
            return 0
    elif len(args.log) > 1:
        timing = run_wall_clock(args.log)  # a resumed run: its stretches, pauses left out
    else:
        timing = wall_clock(args.log[0])
        if timing is None:
            print(f"{args.log[0]}: no finished job in this run; {args.out} kept", file=sys.stderr)
            return 0
    import torch

    from reranker.hardware import cpu_info, cpu_threads, has_fast_half

    info = cpu_info()
    record = provenance(args.command, extra={**timing, "machine": {
        "cpu": info["model"], "cores": cpu_threads(), "bf16": has_fast_half(torch.device("cpu")),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"}})
    write_json(args.out, record, indent=2)
    print(f"{args.out}: {timing['jobs']} {args.part or ''} jobs in {timing['wall_clock_seconds'] / 60:.1f} min".replace("  ", " "))
    return 0
