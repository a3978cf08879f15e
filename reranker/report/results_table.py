"""The results table (`tables results`): systems x collections x measures from saved evaluations, each cell
marked where a paired t-test against a baseline row passes; extra columns read from JSON files the suite wrote
(checkpoint meta, throughput); summary rows of mean ± sample standard deviation; the provenance records of the
models and checkpoints behind the rows. `write_results` makes the table's files from a spec's records."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from reranker.core.config import default
from reranker.formats.evaluations import Evaluation, read_evaluation
from reranker.formats.table_spec import Spec
from reranker.report.figures import PER_QUERY_FIGURE_MEASURE, per_query_difference_figure
from reranker.report.labels import TableError
from reranker.report.notes import checkpoint_note, folds_note
from reranker.report.outputs import Outputs, add_notes_and_source, write_outputs
from reranker.report.table import SECOND_SIGNIFICANT, SIGNIFICANT, Table, Value
from reranker.reproduction.significance import CORRECTIONS, paired_ttest


def add_system(table: Table, row: str, group: str, evaluation: Evaluation,
               baseline: Evaluation | None = None, alpha: float | None = None, second: Evaluation | None = None) -> None:
    """Add one system's aggregate values; mark cells that differ from `baseline` (and `second`: ‡) at p < alpha,
    uncorrected (`Table.correct` redoes the marks with a correction once every system is in). `alpha`: the
    table's own when not given."""
    alpha = table.alpha if alpha is None else alpha
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
        if measure in evaluation.per_query:
            table.per_query[(row, group, measure)] = dict(evaluation.per_query[measure])
        if tests:
            table.pvalues[(row, group, measure)] = tests


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


def value_cells(values: Sequence[Mapping], formats: Sequence[Mapping]) -> tuple[list[tuple[str, str, Value]], dict[str, str], list[str]]:
    """Value and value-format records (reranker.formats.table_spec): the cells, the formats, the files read.

    Everything is checked here, before any output is written."""
    cells, files, cache = [], [], {}
    for record in values:
        cells.append((record["row"], record["column"], json_value(record["path"], record["key"], cache)))
        files.append(record["path"])
    specs = {}
    for record in formats:
        column, fmt = record["column"], record["format"]
        if column not in {c for _, c, _ in cells}:
            raise TableError(f"--value-format {column}:{fmt}: no --value fills column {column!r}")
        specs[column] = fmt
    for row, column, value in cells:
        if column in specs and isinstance(value, int | float):
            try:
                format(value, specs[column])
            except ValueError as err:
                raise TableError(f"--value-format {column}:{specs[column]}: cannot format {value!r} of row {row!r} ({err})") from None
    return cells, specs, files


def read_entries(records: Sequence[Mapping]) -> tuple[list[tuple[str, str, Evaluation]], list[str]]:
    """The `eval` records' (group, row, evaluation), and the files behind them (each evaluation and its run)."""
    entries, inputs = [], []
    for record in records:
        group, row, path = record["group"], record["row"], record["path"]
        evaluation = read_evaluation(path)
        entries.append((group, row, evaluation))
        inputs += [path] + [p for p in evaluation.source.values() if Path(p).exists()]
    return entries, inputs


def results_table(entries: Sequence[tuple[str, str, Evaluation]], measures: Sequence[str], *, caption: str,
                  row_header: str, bold: bool, baseline_row: str | None, second_row: str | None, alpha: float,
                  correction: str) -> Table:
    """Rows of systems against each group's measures, marked against `baseline_row` (†) and `second_row` (‡) at
    p < alpha after `correction`, with a note saying so where there is a baseline."""
    groups = list(dict.fromkeys(g for g, _, _ in entries))
    table = Table(caption, groups, list(measures), row_header=row_header, bold_best=bold)
    baselines = {g: e for g, r, e in entries if r == baseline_row}
    seconds = {g: e for g, r, e in entries if r == second_row}
    table.references = {symbol: row for symbol, row in ((SIGNIFICANT, baseline_row), (SECOND_SIGNIFICANT, second_row)) if row}
    for group, row, evaluation in entries:
        add_system(table, row, group, evaluation, baselines.get(group) if row != baseline_row else None,
                   alpha=alpha, second=seconds.get(group) if row not in (second_row, baseline_row) else None)
    table.correct(correction, alpha)
    return table


def significance_note(baseline_row: str, second_row: str | None, alpha: float, correction: str) -> str:
    """What the marks mean: the test, the rows they test against, the correction."""
    return (f"{SIGNIFICANT} p < {alpha:g}, two-sided paired t-test against {baseline_row}"
            + (f"; {SECOND_SIGNIFICANT} against {second_row}" if second_row else "")
            + f"; {CORRECTIONS[correction].phrase}.")


def models_record(meta_paths: Sequence[str | os.PathLike]) -> dict[str, dict]:
    """Per score or checkpoint meta file, the model fields that identify it (for the numbers' provenance)."""
    models = {}
    for path in meta_paths:
        meta = json.loads(Path(path).read_text())
        models[str(path)] = {key: meta[key] for key in ("checkpoint", "fingerprint", "kind", "precision") if key in meta}
    return models


def checkpoints_record(trained: Mapping[str, Sequence[Mapping]]) -> dict[str, dict | list[dict]]:
    """Per label, its checkpoint's fingerprint, steps, pairs, validation, precision and seconds (a list: one per fold)."""
    fields = ("fingerprint", "steps", "pairs", "validation", "precision", "seconds")
    return {label: [{key: meta.get(key) for key in fields} for meta in metas]
            if len(metas) > 1 else {key: metas[0].get(key) for key in fields}
            for label, metas in trained.items()}


def check_figure_inputs(entries: Sequence[tuple[str, str, Evaluation]], baseline_row: str | None) -> None:
    """`--figure` plots each group's best row's per-query AP@1000 against the baseline row: both must be there."""
    if not baseline_row:
        raise TableError("--figure: plots per-query differences against the baseline row: give --baseline-row")
    lacking = [f"{group}/{row}" for group, row, evaluation in entries if PER_QUERY_FIGURE_MEASURE not in evaluation.per_query]
    if lacking:
        raise TableError(f"--figure: plots per-query {PER_QUERY_FIGURE_MEASURE}, which the evaluations of {', '.join(lacking[:3])}"
                         f"{' and more' if len(lacking) > 3 else ''} lack: evaluate them with it, or leave out --figure")


def write_results(cells: Spec, outputs: Outputs, measures: Sequence[str], *, caption: str = "", row_header: str = "System",
                  bold: bool = True, baseline_row: str | None = None, second_row: str | None = None, alpha: float | None = None,
                  correction: str = "none", figure: str | None = None, meta: Sequence[str] = (),
                  machine_columns: Sequence[str] = ()) -> list[Path]:
    """`tables results`: the table of the spec's records (`eval`, `value`, `value_format`, `summary_row`,
    `checkpoints`, `note`), its per-query figure (`figure`), its files and its numbers; the paths written.
    `alpha`: the configuration schema's when not given; `meta`: score or checkpoint metas whose model fingerprints
    go into the provenance; `machine_columns`: extra columns measured on this machine (never compared)."""
    alpha = default("significance.alpha") if alpha is None else alpha
    values, value_formats, inputs = value_cells(cells["value"], cells["value_format"])  # before writing anything
    entries, read = read_entries(cells["eval"])
    inputs += read
    if figure:
        check_figure_inputs(entries, baseline_row)
    table = results_table(entries, measures, caption=caption, row_header=row_header, bold=bold,
                          baseline_row=baseline_row, second_row=second_row, alpha=alpha, correction=correction)
    for record in cells["summary_row"]:
        table.add_summary(record["label"], record["rows"])
    for row, column, value in values:
        table.add_value(row, column, value)
    table.extra_formats.update(value_formats)
    if baseline_row:
        table.notes.append(significance_note(baseline_row, second_row, alpha, correction))
    if figure:
        chosen = per_query_difference_figure(entries, baseline_row, figure)
        table.notes.append(f"Per-query AP differences of the best rows ({', '.join(f'{g}: {r}' for g, r in chosen.items())}): "
                           f"{Path(figure).name}.")
    add_notes_and_source(table, outputs, cells.get("note", []), inputs)
    trained: dict[str, list[dict]] = {}
    for record in cells["checkpoints"]:
        trained.setdefault(record["label"], []).append(json.loads(Path(record["path"]).read_text()))
        inputs.append(record["path"])
    for label, metas in trained.items():  # one checkpoint per label, or one per fold (a summary)
        table.notes.append(checkpoint_note(label, metas[0]) if len(metas) == 1 else folds_note(label, metas))

    def extra() -> dict:  # the metas are read only when the numbers are written
        record = {"models": models_record(meta)} if meta else {}
        if trained:
            record["checkpoints"] = checkpoints_record(trained)
        return record

    return write_outputs(table, outputs, inputs, extra, machine_columns)
