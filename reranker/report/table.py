"""A table: rows of systems against column groups (collections) of measures, each cell with its marks,
the source's numbers beside ours, notes; written as Markdown, CSV, LaTeX and HTML, and its numbers as a
document with their provenance (`write_numbers`), which `Table.from_document` reads back (reranker.report.outputs
writes all of these where a command says).

Shared by the tables stage (results from evaluations), the run records (the resources table) and
anything else that renders one; it computes nothing from runs itself.
"""

from __future__ import annotations

import csv
import io
import math
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reranker.core.config import default
from reranker.formats.atomic import write_json, write_text
from reranker.formats.source_numbers import SourceTable
from reranker.report.labels import MEASURE_LABELS, TableError
from reranker.report.query_sets import other_queries, query_note
from reranker.reproduction.significance import CORRECTIONS

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
    # Each cell's per-query values (qid -> value): what a claim's paired test and bootstrap read (reranker.reproduction.claims).
    per_query: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)  # mark -> the row it tests against
    correction: str = "none"  # the multiple-testing correction behind the marks
    alpha: float = field(default_factory=lambda: default("significance.alpha"))
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
    other_cache: tuple[tuple, set] | None = field(default=None, repr=False, compare=False)  # query_sets.other_queries, with what it read

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

    def correct(self, correction: str = "none", alpha: float | None = None) -> None:
        """Marks from the stored p-values, adjusted per family: one column's tests against one reference."""
        adjust = CORRECTIONS[correction].adjust
        alpha = default("significance.alpha") if alpha is None else alpha
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
            cell = self.source.beside_cell(row, group, measure[len(SOURCE_COLUMN):], self.groups) if self.source else None
            if cell is None:
                return "–"
            other = self.source.other_setting(cell)  # never silently another setting than our row's
            return f"{cell.value:.4f}" + (f" ({other})" if other else "")
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
        other = f" (n={len(self.per_query[(row, group, measure)])})" if (row, group, measure) in other_queries(self) else ""
        return f"{number}{self.marks.get((row, group, measure), '')}{other}"

    def best(self, group: str, measure: str) -> set[str]:
        """The rows to bold: every row that ties with the best at the printed precision, among the rows that
        average over the column's queries (a row over other queries is never best: its mean is not comparable)."""
        if not self.bold_best or measure in self.extra_columns:
            return set()
        other = other_queries(self)
        scored = {r: round(self.cells[(r, group, measure)], 4) for r in self.rows if (r, group, measure) in self.cells
                  and not math.isnan(self.cells[(r, group, measure)]) and (r, group, measure) not in self.pending
                  and (r, group, measure) not in other}
        top = max(scored.values(), default=None)
        return {r for r, value in scored.items() if value == top}

    def layout(self) -> list[tuple[str, str]]:
        """The printed (group, column) cells of a row: each group's measures, each followed by the source's
        value where the source has one for some row (`source:` + measure), then the source's own groups that
        are none of ours (another collection: its columns of its own, never in place of ours), then the extra
        columns once (their value is the same in every group)."""
        cells = []
        for g in self.groups:
            for m in self.measures:
                cells.append((g, m))
                if self.source and any(self.source.beside(r, g, m, self.groups) is not None for r in self.rows):
                    cells.append((g, SOURCE_COLUMN + m))
        for g in self.source_groups():
            cells += [(g, SOURCE_COLUMN + c) for c in self.source.foreign_columns(g)
                      if any(self.source.beside(r, g, c, self.groups) is not None for r in self.rows)]
        return cells + [(self.groups[0], c) for c in self.extra_columns]

    def source_groups(self) -> list[str]:
        """The source's groups beside our rows that are none of ours (e.g. Birch's Robust04 beside our collections)."""
        if not self.source:
            return []
        return [g for g in self.source.foreign_groups(self.groups)
                if any(self.source.beside(r, g, c, self.groups) is not None for r in self.rows for c in self.source.foreign_columns(g))]

    def header(self, with_group: bool = True) -> list[str]:
        def label(g: str, m: str) -> str:
            source = m.startswith(SOURCE_COLUMN)
            m = m.removeprefix(SOURCE_COLUMN)
            text = MEASURE_LABELS.get(m, m)
            ours = g in self.groups
            text = f"{g} {text}" if with_group and (len(self.groups) > 1 and m in self.measures or not ours) else text
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
        layout = self.layout()
        foreign = self.source_groups()
        other = any(self.source.other_setting(cell) for r in self.rows for g, m in layout if m.startswith(SOURCE_COLUMN)
                    for cell in [self.source.beside_cell(r, g, m[len(SOURCE_COLUMN):], self.groups)] if cell)
        shown = (f" {SOURCE_MARK} columns above: the source's value for our row" + (f" at {self.source.at}" if self.source.at else "")
                 + (f"; ours is {self.source.ours}, so a cell at another setting names it in brackets" if other else "")
                 + (f"; {', '.join(foreign)}: the source's {'collections' if len(foreign) > 1 else 'collection'}, none of ours,"
                    " in columns of their own" if foreign else "") + ".")
        note = self.source.note.rstrip(".")
        return (f"{SOURCE_MARK} {self.source.work}, {self.source.table}, as published"
                + (f": {note}" if note else "") + "." + (shown if any(m.startswith(SOURCE_COLUMN) for _, m in layout) else "")
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
        lines += [""] + [f"{note}  " for note in self.pending_note() + query_note(self) + self.notes]
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
        notes = "".join(f"<p>{escape(note)}</p>" for note in self.pending_note() + query_note(self) + self.notes)
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
        groups = self.groups + self.source_groups()
        if len(groups) > 1:
            width = {g: sum(1 for lg, m in layout if lg == g and m not in self.extra_columns) for g in groups}
            lines.append(" & " + " & ".join([f"\\multicolumn{{{width[g]}}}{{c}}{{{_tex(g)}}}" for g in groups if width[g]]
                                            + [""] * len(self.extra_columns)) + " \\\\")
        lines.append(f"{_tex(self.row_header)} & " + " & ".join(_tex(h) for h in header[1:]) + " \\\\")
        lines.append("\\midrule")
        for row in self.rows:
            cells = []
            for g, m in self.layout():
                text = self.text(row, g, m)
                text = _tex(text) if m in self.extra_columns or m.startswith(SOURCE_COLUMN) else text.replace(PLUS_MINUS, "$\\pm$")
                text = _marks(text).replace("–", "--")
                cells.append(f"\\textbf{{{text}}}" if row in self.best(g, m) else text)
            lines.append(f"{_tex(row)} & " + " & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        notes = self.pending_note() + query_note(self) + self.notes
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

    def per_query_record(self) -> dict:
        """{group: {row: {measure: {qid: value}}}}: every cell's per-query values, rounded to 6 places (the
        measures' own precision is far coarser; it keeps the stored files small)."""
        out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
        for (row, g, m), values in self.per_query.items():
            out.setdefault(g, {}).setdefault(row, {})[m] = {q: round(float(v), 6) for q, v in sorted(values.items())}
        return out

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
        table.alpha = significance.get("alpha", default("significance.alpha"))
        for g, rows in (document.get("per_query") or {}).items():
            for row, measures in rows.items():
                for m, values in measures.items():
                    table.per_query[(row, g, m)] = dict(values)
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


def write_numbers(table: Table, path: str | os.PathLike, provenance: Mapping,
                  machine_dependent: Sequence[str] = ()) -> None:
    """Store a table's numbers with what produced them (command, commit, versions, checksums).

    `machine_dependent` columns (timings) are stored but not compared with a reference."""
    document = {"caption": table.caption, "provenance": dict(provenance), "numbers": table.numbers(),
                "layout": table.layout_record()}
    if table.pvalues:
        document["significance"] = table.significance()
    if table.per_query:  # beside `numbers`, not in it: compare matches `numbers` only
        document["per_query"] = table.per_query_record()
    if Path(path).name != "resources.json":  # what the run that made these numbers cost, beside them
        document["provenance"]["resources"] = str(Path(path).with_name("resources.json"))
    if machine_dependent:
        document["machine_dependent"] = sorted(machine_dependent)
    write_json(path, document, indent=1, sort_keys=True, ensure_ascii=False)
