"""Experiment tables (Markdown, CSV, LaTeX, HTML) with significance marks, in the spirit of PyTerrier's: the
command line of every table, figure and run record (`python -m reranker tables SUBCOMMAND`); what each makes
lives in reranker.report.

A table is rows of systems against column groups (collections) of measures. Each cell may carry a
mark: `†` means p < 0.05 in a two-sided paired t-test against the baseline row of its group.
Tables are written from saved evaluations (reranker.stages.evaluate JSON), never from typed numbers; extra
columns (`--value`) are read from JSON files the suite wrote (checkpoint meta, throughput), and summary rows
(`--summary-row`) give the mean ± sample standard deviation over rows such as seeds. Rules give a table's cells
as a spec file (`--spec`, reranker.formats.table_spec: labels and paths as records, never split on a colon);
the `--eval GROUP:ROW:EVAL.json` options are for hand use, parsed here into the same records.

Subcommands and where they live: `results`, `stats`, `pretraining` (reranker.report.results_table, stats_table,
pretraining_table; the Table, its formats and its numbers document in reranker.report.table, the notes on
fine-tuned checkpoints in reranker.report.notes); `figure ranks|curves|sweep` and the per-query figure of
`results --figure` (reranker.report.figures); `rerender`, a stored table anew from its numbers
(reranker.report.rerender); `split` (reranker.report.gap_split); a run's wall clock and its resources table
(`wallclock`, `resources`: reranker.report.run_records, which reranker.workflow.finish also calls after the DAG
of `make run`); the run's seed index (`index`: reranker.report.seed_index).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from reranker.core.config import default
from reranker.core.flags import overlay
from reranker.formats.entry import exits_on_input_error
from reranker.formats.table_spec import KINDS, Spec, checked_spec, read_spec
from reranker.report import figures, gap_split, run_records, seed_index
from reranker.report.labels import TableError, spec_or_options, split_labelled
from reranker.report.pretraining_table import write_pretraining
from reranker.report.rerender import rerender
from reranker.report.results_table import write_results
from reranker.report.stats_table import write_stats
from reranker.report.table import add_output_arguments
from reranker.reproduction.significance import CORRECTIONS


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


def printed(make: Callable[[argparse.Namespace], list]) -> Callable[[argparse.Namespace], int]:
    """A subcommand that returns the paths it wrote: they are printed, one a line."""
    def run(args: argparse.Namespace) -> int:
        for path in make(args):
            print(path)
        return 0
    return run


def table_command(write: Callable[[argparse.Namespace, Spec], list]) -> Callable[[argparse.Namespace], int]:
    """A table kind's subcommand: its cells from --spec or the hand options, then its writer."""
    return printed(lambda args: write(args, table_cells(args)))


def add_table_parsers(sub: argparse._SubParsersAction) -> None:
    """`tables results|stats|pretraining`: a table from saved evaluations, statistics or pre-trained checkpoints."""
    results = sub.add_parser("results", help="systems x collections x measures, with significance marks")
    results.set_defaults(handler=table_command(write_results))
    results.add_argument("--eval", nargs="+", default=[], metavar="GROUP:ROW:EVAL.json",
                         help="one saved evaluation per cell: column group (e.g. a collection) and row (e.g. a system)")
    results.add_argument("--row-header", default="System")
    results.add_argument("--no-bold", action="store_true", help="do not bold the best row per column")
    results.add_argument("--baseline-row", help="row that significance is tested against (per collection)")
    results.add_argument("--second-baseline-row", help="a second such row, marked ‡")
    results.add_argument("--alpha", type=float, default=default("significance.alpha"),
                         help="significance level of the marks (default: the configuration schema's)")
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
    stats.set_defaults(handler=table_command(write_stats))
    stats.add_argument("--stats", nargs="+", default=[], metavar="COLLECTION:STATS.json")
    pretraining = sub.add_parser("pretraining", help="held-out token accuracy (mlm) or loss (nsp) of pre-trained checkpoints")
    pretraining.set_defaults(handler=table_command(write_pretraining))
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


def add_rerender_parser(sub: argparse._SubParsersAction) -> None:
    """`tables rerender` (reranker.report.rerender)."""
    about = "A stored table rendered anew from its numbers JSON: the source's numbers beside it, cells marked pending."
    parser = sub.add_parser("rerender", help="a stored table rendered anew from its numbers JSON", description=about)
    parser.set_defaults(handler=printed(lambda args: rerender(args.numbers, args.out, args.formats, args.sources, args.source_table,
                                                          args.measures, args.pending, args.pending_why)))
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


def parser() -> argparse.ArgumentParser:
    """Every subcommand of the stage; each sets `handler`, the function that does it (not `run`: `figure ranks --run` is taken)."""
    top = argparse.ArgumentParser(prog="python -m reranker tables",
                                  description="Tables from saved evaluations (reranker.stages.evaluate JSON) or statistics.")
    sub = top.add_subparsers(dest="kind", required=True)
    add_table_parsers(sub)
    figures.add_figure_parsers(sub).set_defaults(handler=printed(figures.run_figure))
    add_rerender_parser(sub)
    gap_split.add_parser(sub)
    run_records.add_parsers(sub)
    seed_index.add_parser(sub)
    return top


@exits_on_input_error("tables")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    overlay({}, args, {"--alpha": "significance.alpha"})  # checked as the configuration's alpha is
    return args.handler(args)
