"""Experiment tables (Markdown, CSV, LaTeX) with significance marks, in the spirit of PyTerrier's.

A table is rows of systems against column groups (collections) of measures. Each cell may carry a
mark: `†` means p < 0.05 in a two-sided paired t-test against the baseline row of its group.
Tables are written from saved evaluations (reranker.stages.evaluate JSON), never from typed numbers; extra
columns (`--value`) are read from JSON files the suite wrote (checkpoint meta, throughput), and summary rows
(`--summary-row`) give the mean ± sample standard deviation over rows such as seeds. Figures over runs,
checkpoints and sweeps are in reranker.report.figures (`tables figure ...`); the notes on fine-tuned checkpoints
under a results table in reranker.report.notes; the Table itself, its formats and its numbers document in
reranker.report.table. `tables rerender` renders a stored table anew from its numbers. Rules give a table's cells
as a spec file (`--spec`, reranker.formats.table_spec: labels and paths as records, never split on a colon);
the `--eval GROUP:ROW:EVAL.json` options are for hand use.

The command line also reaches what lives elsewhere, so that rules and hands call one stage: run records, a
run's wall clock and its resources table (`tables wallclock|resources`: reranker.report.run_records, which
reranker.workflow.finish also calls after the DAG of `make run`), and the run's seed index (`tables index`:
reranker.reproduction.claims).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from reranker.core.flags import overlay
from reranker.core.provenance import provenance
from reranker.formats.atomic import write_json, write_text
from reranker.formats.errors import exits_on_input_error
from reranker.formats.evaluations import Evaluation, read_evaluation
from reranker.formats.source_numbers import read_source_numbers
from reranker.formats.table_spec import KINDS, PRETRAINING_TABLE, STATS_TABLE, Spec, checked_spec, read_spec
from reranker.report.labels import MEASURE_LABELS, TableError, spec_or_options, split_labelled  # noqa: F401 (shared with figures)
from reranker.report.notes import checkpoint_note, folds_note
from reranker.report.table import SECOND_SIGNIFICANT, SIGNIFICANT, Table, Value, add_output_arguments, write_numbers
from reranker.reproduction.significance import CORRECTIONS, paired_ttest


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
        if measure in evaluation.per_query:
            table.per_query[(row, group, measure)] = dict(evaluation.per_query[measure])
        if tests:
            table.pvalues[(row, group, measure)] = tests


def stats_table(stats: Mapping[str, Mapping[str, float]], caption: str) -> Table:
    """Dataset statistics: one row per collection."""
    group, columns = STATS_TABLE[0], list(STATS_TABLE[1])
    table = Table(caption, [group], columns, bold_best=False,
                  number_format=lambda column, value: f"{value:.2f}" if column.startswith("mean") else f"{int(value)}")
    for collection, values in stats.items():
        for column in columns:
            if values.get(column) is not None:
                table.add(collection, group, column, float(values[column]))
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


def split_value(spec: str) -> dict:
    """`--value ROW:COLUMN:JSON_FILE:KEY` as a spec record (the path may hold colons; the key may not)."""
    row, _, rest = spec.partition(":")
    column, _, rest = rest.partition(":")
    path, _, key = rest.rpartition(":")
    if not (row and column and path and key):
        raise TableError(f"--value {spec!r}: expected ROW:COLUMN:JSON_FILE:KEY")
    return {"row": row, "column": column, "path": path, "key": key}


def split_value_format(spec: str) -> dict:
    """`--value-format COLUMN:SPEC` as a spec record."""
    column, _, fmt = spec.rpartition(":")
    if not column or not fmt:
        raise TableError(f"--value-format {spec!r}: expected COLUMN:SPEC (e.g. 'pairs/s:,.0f')")
    return {"column": column, "format": fmt}


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


def parse_summary_spec(spec: str) -> tuple[str, list[str]]:
    """`--summary-row LABEL:ROW1|ROW2|...` (row labels may hold commas: "MiniLM-L6, seed 2")."""
    label, _, rows = spec.partition(":")
    names = [r.strip() for r in rows.split("|") if r.strip()]
    if not label or not names:
        raise TableError(f"--summary-row {spec!r}: expected LABEL:ROW1|ROW2|...")
    return label, names


def labelled(option: str, form: str, fields: Sequence[str]) -> Callable[[str], dict]:
    """The parser of an option `A:PATH` or `A:B:PATH` (`form`) into a spec record with `fields`."""
    return lambda spec: dict(zip(fields, split_labelled(spec, option, form, len(fields))))


# The cell options a spec file replaces, per subcommand: (option, its argparse dest, which is the spec's kind of
# record, and the parser of one option into such a record), in the order they are parsed; the option the
# subcommand cannot do without first.
CELL_OPTIONS = {
    "results": (("--eval", "eval", labelled("--eval", "GROUP:ROW:EVAL.json", ("group", "row", "path"))),
                ("--value", "value", split_value),
                ("--value-format", "value_format", split_value_format),
                ("--summary-row", "summary_row", lambda spec: dict(zip(("label", "rows"), parse_summary_spec(spec)))),
                ("--checkpoints", "checkpoints", labelled("--checkpoints", "LABEL:reranker.json", ("label", "path")))),
    "stats": (("--stats", "stats", labelled("--stats", "COLLECTION:STATS.json", ("group", "path"))),),
    "pretraining": (("--checkpoints", "checkpoints", labelled("--checkpoints", "LABEL:reranker.json", ("label", "path"))),),
}


def table_cells(args: argparse.Namespace) -> Spec:
    """The table's cells as spec records: from `--spec FILE` (what rules give), or from the options typed by
    hand (`--eval GROUP:ROW:EVAL.json` ...), never both; the records are in the order given either way."""
    options = CELL_OPTIONS[args.kind]
    given = [option for option, dest, _ in sorted(options, key=lambda entry: list(KINDS).index(entry[1]))
             if getattr(args, dest, None)]  # named in the spec's order
    spec_or_options(args.spec, given, options[0][0], "cells", f"tables {args.kind}")
    if args.spec:
        return read_spec(args.spec)
    cells = checked_spec({}, "the command line")
    for _, dest, parse in options:
        cells[dest] = [parse(spec) for spec in getattr(args, dest)]
    return cells


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


def pretraining_table(checkpoints: Sequence[tuple[str, Mapping]], caption: str) -> Table:
    """Rows: pre-trained checkpoints (label and the checkpoint's reranker.json, read); cells: held-out token
    accuracy (mlm) or loss, before and after."""
    group, (before, after, loss) = PRETRAINING_TABLE
    table = Table(caption, [group], [before, after, loss], row_header="Pre-training", bold_best=False)
    for label, meta in checkpoints:
        v = meta.get("validation") or {}
        metric = "accuracy" if "accuracy" in v else "mrr"
        table.add(label, group, before, v.get(f"untrained_{metric}", math.nan))
        table.add(label, group, after, v.get(metric, math.nan))
        table.add(label, group, loss, v.get("loss", math.nan))
    return table


def main_rerender(argv: list[str]) -> int:
    """A stored table rendered anew from its numbers JSON: the source's numbers beside it, cells marked pending."""
    parser = argparse.ArgumentParser(prog="python -m reranker tables rerender", description=main_rerender.__doc__)
    parser.add_argument("--numbers", required=True, help="the table's numbers JSON (results/numbers/<table>.json); its layout is added")
    parser.add_argument("--out", required=True, help="output path without suffix")
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


@exits_on_input_error("tables")
def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] in (["wallclock"], ["resources"], ["index"]):  # kept here so that rules and hands call one stage
        from reranker.report import run_records as records  # imported here: only these commands need them
        from reranker.report import seed_index

        return {"wallclock": records.main_wall_clock, "resources": records.main_resources,
                "index": seed_index.main_index}[argv[0]](argv[1:])
    if argv[:1] == ["rerender"]:
        return main_rerender(argv[1:])
    if argv[:1] == ["split"]:  # the gap to a source split into first stage and reranker, from a table's numbers
        from reranker.report import gap_split as split

        parser = argparse.ArgumentParser(prog="python -m reranker tables")
        split.add_parser(parser.add_subparsers(dest="kind", required=True))
        return split.run_split(parser.parse_args(argv))
    parser = argparse.ArgumentParser(prog="python -m reranker tables",
                                     description="Tables from saved evaluations (reranker.stages.evaluate JSON) or statistics.")
    sub = parser.add_subparsers(dest="kind", required=True)
    results = sub.add_parser("results", help="systems x collections x measures, with significance marks")
    results.add_argument("--eval", nargs="+", default=[], metavar="GROUP:ROW:EVAL.json",
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
    stats.add_argument("--stats", nargs="+", default=[], metavar="COLLECTION:STATS.json")
    pretraining = sub.add_parser("pretraining", help="held-out token accuracy (mlm) or loss (nsp) of pre-trained checkpoints")
    pretraining.add_argument("--checkpoints", nargs="+", default=[], metavar="LABEL:reranker.json")
    for command in (results, stats, pretraining):
        command.add_argument("--spec", metavar="FILE",
                             help="the cells as structured records (reranker.formats.table_spec), as rules give them: "
                                  "instead of --eval, --checkpoints, --value, --value-format, --summary-row and --stats")
        command.add_argument("--caption", default="")
        command.add_argument("--note", action="append", default=[], help="a line under the table")
        add_output_arguments(command)
        command.add_argument("--sources", help="the sources' numbers (workflow/config/source_numbers.yaml), shown beside ours")
        command.add_argument("--source-table", help="the table's id in --sources (default: --out's name)")
    from reranker.report.figures import add_figure_parsers, run_figure

    add_figure_parsers(sub)
    args = parser.parse_args(argv)
    overlay({}, args, {"--alpha": "significance.alpha"})  # checked as the configuration's alpha is
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
    cells = table_cells(args)
    if args.kind == "results":
        values, value_formats, value_files = value_cells(cells["value"], cells["value_format"])  # before writing anything
        summaries = [(record["label"], record["rows"]) for record in cells["summary_row"]]
        inputs += value_files
        entries = []
        for record in cells["eval"]:
            group, row, path = record["group"], record["row"], record["path"]
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
        pretrained = [(record["label"], json.loads(Path(record["path"]).read_text())) for record in cells["checkpoints"]]
        table = pretraining_table(pretrained, args.caption)
        inputs += [record["path"] for record in cells["checkpoints"]]
    else:
        collected = {}
        for record in cells["stats"]:
            group, path = record["group"], record["path"]
            collected[group] = json.loads(Path(path).read_text())
            inputs.append(path)
        table = stats_table(collected, args.caption)
    table.notes += args.note + [record["text"] for record in cells.get("note", [])]
    if args.sources:
        table.source = read_source_numbers(args.sources).get(args.source_table or Path(args.out).name)
        inputs.append(args.sources)
    trained: dict[str, list[dict]] = {}
    for record in cells["checkpoints"] if args.kind == "results" else []:
        label, path = record["label"], record["path"]
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
        if args.kind == "pretraining":  # the pre-trained checkpoints' fingerprints, as for fine-tuned ones (no notes)
            for label, meta in pretrained:
                trained.setdefault(label, []).append(meta)
        if trained:
            fields = ("fingerprint", "steps", "pairs", "validation", "precision", "seconds")
            extra["checkpoints"] = {label: [{key: meta.get(key) for key in fields} for meta in metas]
                                    if len(metas) > 1 else {key: metas[0].get(key) for key in fields}
                                    for label, metas in trained.items()}
        write_numbers(table, args.numbers, provenance(args.command, sorted(set(inputs)), extra),
                      getattr(args, "machine_column", ()))
        written.append(Path(args.numbers))
    return written
