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

Every subcommand's options are parsed here and handed to typed functions (no module of reranker.report reads
a Namespace), which live in: `results`, `stats`, `pretraining` (reranker.report.results_table, stats_table,
pretraining_table; the Table, its formats and its numbers document in reranker.report.table, where its files go
in reranker.report.outputs, the notes on fine-tuned checkpoints in reranker.report.notes);
`figure ranks|curves|sweep` and the per-query figure of `results --figure` (reranker.report.figures); `rerender`,
a stored table anew from its numbers (reranker.report.rerender); `split` (reranker.report.gap_split); a run's wall
clock and its resources table (`wallclock`, `resources`: reranker.report.run_records, which
reranker.workflow.finish also calls after the DAG of `make run`); the run's seed index (`index`:
reranker.report.seed_index).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from reranker.core.config import default
from reranker.core.flags import overlay
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.table_spec import KINDS, Spec, checked_spec, read_spec
from reranker.report import figures, gap_split, run_records, seed_index
from reranker.report.labels import TableError, spec_or_options, split_labelled
from reranker.report.outputs import Outputs
from reranker.report.pretraining_table import write_pretraining
from reranker.report.rerender import rerender
from reranker.report.results_table import write_results
from reranker.report.stats_table import write_stats
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


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """--out, --formats, --numbers and --command: where a table goes and what made it (every command that makes one)."""
    parser.add_argument("--out", required=True, help="output path without suffix")
    parser.add_argument("--formats", nargs="+", default=["md", "csv"], choices=["md", "csv", "tex", "html"])
    parser.add_argument("--numbers", help="also store every number with its provenance (JSON)")
    parser.add_argument("--command", default="", help="the command that produced the table, for provenance")


def outputs(args: argparse.Namespace) -> Outputs:
    """The options of `add_output_arguments`, and --note, --sources and --source-table where the subcommand has them."""
    return Outputs(args.out, tuple(args.formats), args.numbers, args.command, tuple(getattr(args, "note", ())),
                   getattr(args, "sources", None), getattr(args, "source_table", None))


def results_command(args: argparse.Namespace) -> list:
    return write_results(table_cells(args), outputs(args), args.measures, caption=args.caption, row_header=args.row_header,
                         bold=not args.no_bold, baseline_row=args.baseline_row, second_row=args.second_baseline_row,
                         alpha=args.alpha, correction=args.correction, figure=args.figure, meta=args.meta,
                         machine_columns=args.machine_column)


def stats_command(args: argparse.Namespace) -> list:
    return write_stats(table_cells(args), outputs(args), args.caption)


def pretraining_command(args: argparse.Namespace) -> list:
    return write_pretraining(table_cells(args), outputs(args), args.caption)


def add_table_parsers(sub: argparse._SubParsersAction) -> None:
    """`tables results|stats|pretraining`: a table from saved evaluations, statistics or pre-trained checkpoints."""
    results = sub.add_parser("results", help="systems x collections x measures, with significance marks")
    results.set_defaults(handler=printed(results_command))
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
    stats.set_defaults(handler=printed(stats_command))
    stats.add_argument("--stats", nargs="+", default=[], metavar="COLLECTION:STATS.json")
    pretraining = sub.add_parser("pretraining", help="held-out token accuracy (mlm) or loss (nsp) of pre-trained checkpoints")
    pretraining.set_defaults(handler=printed(pretraining_command))
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


def figure_command(args: argparse.Namespace) -> list:
    drawn = {"out": args.out, "numbers": args.numbers, "title": args.title, "command": args.command}
    if args.figure == "ranks":
        return figures.draw_ranks(args.run, args.qrels, args.depth, min_grade=args.relevant_min_grade, **drawn)
    if args.figure == "curves":
        return figures.draw_curves(args.checkpoint, what=args.what, **drawn)
    return figures.draw_sweep(args.measures, evals=args.eval, spec=args.spec, xlabel=args.xlabel, logx=args.logx, **drawn)


def add_figure_parsers(sub: argparse._SubParsersAction) -> None:
    """`tables figure ranks|curves|sweep` (reranker.report.figures), beside `tables results`."""
    figure = sub.add_parser("figure", help="figures from runs, checkpoints or evaluations (ranks, curves, sweep)")
    figure.set_defaults(handler=printed(figure_command))
    kinds = figure.add_subparsers(dest="figure", required=True)
    ranks = kinds.add_parser("ranks", help="rank of each query's first relevant document in the top R, per run")
    ranks.add_argument("--run", action="append", required=True, metavar="LABEL:RUN_FILE", help="a TREC run (repeatable)")
    ranks.add_argument("--qrels", required=True)
    ranks.add_argument("--depth", type=int, required=True, metavar="R", help="ranks 1..R, then 'not in top R'")
    ranks.add_argument("--relevant-min-grade", type=int, default=1, help="the lowest grade that counts as relevant")
    curves = kinds.add_parser("curves", help="training and held-out loss against step, per checkpoint")
    curves.add_argument("--checkpoint", action="append", required=True, metavar="LABEL:CHECKPOINT_DIR",
                        help="a trained checkpoint directory with train_log.jsonl and validation_log.jsonl (repeatable)")
    curves.add_argument("--what", choices=["both", "validation"], default="both",
                        help="both: training loss (moving average) and held-out loss; validation: held-out loss only")
    sweep = kinds.add_parser("sweep", help="measures against a swept number (e.g. candidates R), one line per system")
    sweep.add_argument("--eval", action="append", default=[], metavar="X:LABEL:EVAL.json",
                       help="a saved evaluation at x-axis value X for line LABEL (repeatable)")
    sweep.add_argument("--spec", metavar="FILE", help="the points as `sweep` records (reranker.formats.table_spec), "
                                                      "as rules give them: instead of --eval")
    sweep.add_argument("--measures", nargs="+", required=True, help="one panel each (e.g. RR@10 R@10)")
    sweep.add_argument("--xlabel", default="R")
    sweep.add_argument("--logx", action="store_true", help="a logarithmic x axis (e.g. R = 10, 100, 1000)")
    for command in (ranks, curves, sweep):
        command.add_argument("--out", required=True, help="the figure (PNG; the suffix picks the format)")
        command.add_argument("--numbers", help="also store the figure's numbers with their provenance (JSON)")
        command.add_argument("--title", default="")
        command.add_argument("--command", default="", help="the command that produced the figure, for provenance")


def split_command(args: argparse.Namespace) -> list:
    """--stored and --into, or every role's row with --numbers and --out."""
    if args.stored:
        if not args.into:
            raise InputError("--stored needs --into: the Markdown note whose split it rewrites")
        return [gap_split.rewrite_note(args.stored, args.into)]
    roles = gap_split.ROLES
    missing = [f"--{role.replace('_', '-')}" for role in roles if not getattr(args, role)] + (["--numbers"] if not args.numbers else [])
    if missing or not args.out:
        raise InputError(f"tables split: {', '.join(missing + ([] if args.out else ['--out']))} needed (or --stored and --into)")
    return [gap_split.write_split(args.numbers, {role: getattr(args, role) for role in roles}, args.out, sources=args.sources,
                                  source_table=args.source_table, measures=args.measures, command=args.command)]


def add_split_parser(sub: argparse._SubParsersAction) -> None:
    """`tables split` (reranker.report.gap_split)."""
    parser = sub.add_parser("split", help="the gap to a source split into first stage and reranker (reranker.report.gap_split)")
    parser.set_defaults(handler=printed(split_command))
    parser.add_argument("--numbers", help="a results table's numbers JSON (tables results --numbers)")
    parser.add_argument("--sources", help="the sources' numbers (workflow/config/source_numbers.yaml)")
    parser.add_argument("--source-table", help="the table's id in --sources (default: --numbers' name)")
    for role, about in zip(gap_split.ROLES, ("our first stage's row", "our reranker's row (on our first stage)",
                                             "the row of the source's own first stage", "our reranker's row on the source's first stage")):
        parser.add_argument(f"--{role.replace('_', '-')}", help=about)
    parser.add_argument("--measures", nargs="+", default=[], help="the measures to split (default: the table's)")
    parser.add_argument("--out", help="the split's JSON (numbers, text, provenance)")
    parser.add_argument("--command", default="", help="the command that produced it, for provenance")
    parser.add_argument("--stored", help="instead: a stored split JSON, whose text --into gets")
    parser.add_argument("--into", help="with --stored: the Markdown note whose split (between its markers) is rewritten")


def wallclock_command(args: argparse.Namespace) -> int:
    run_records.record_wall_clock(args.log, args.out, part=args.part, command=args.command)
    return 0


def resources_command(args: argparse.Namespace) -> list:
    return run_records.write_resources(args.run_dir, outputs(args), run_json=args.wall_clock, caption=args.caption,
                                       groups=args.checkpoint_groups)


def add_record_parsers(sub: argparse._SubParsersAction) -> None:
    """`tables wallclock` and `tables resources` (reranker.report.run_records)."""
    parser = sub.add_parser("wallclock", help="the wall clock of a finished Snakemake run, from its logs",
                            description="the wall clock of a finished Snakemake run, from its log")
    parser.set_defaults(handler=wallclock_command)
    parser.add_argument("--log", required=True, action="append",
                        help=".snakemake/log/*.snakemake.log of the run; one per stretch of a resumed run (runs/<profile>/logs/)")
    parser.add_argument("--part", metavar="REGEX",
                        help="time only the jobs whose rule, outputs or wildcards match this regular expression "
                             "(e.g. 'radboud|segment_documents'), over every --log")
    parser.add_argument("--out", required=True, help="JSON to write (kept as it is when the run did no job)")
    parser.add_argument("--command", default="", help="the command that was timed")
    parser = sub.add_parser("resources", help="what every stage of a run cost, from Snakemake's benchmarks",
                            description="time, memory, pairs/s and GPU use per stage and collection of one run")
    parser.set_defaults(handler=printed(resources_command))
    parser.add_argument("--run-dir", required=True, help="the run folder: its benchmarks/ and work/ are read")
    parser.add_argument("--wall-clock", help="numbers/run.json of the finished run (`tables wallclock`): compared with the jobs' time")
    parser.add_argument("--caption", default="What every stage cost")
    parser.add_argument("--checkpoint-groups", nargs="*", default=[], metavar="PREFIX",
                        help="one row for all train jobs of checkpoints named PREFIX... (a paper's per-fold ones)")
    add_output_arguments(parser)


def index_command(args: argparse.Namespace) -> list:
    return seed_index.write_index(args.run_dir, args.seeds, args.out, command=args.command, preface=args.preface,
                                  figure=args.figure, sources=args.sources, catalog=args.catalog)


def add_index_parser(sub: argparse._SubParsersAction) -> None:
    """`tables index` (reranker.report.seed_index)."""
    parser = sub.add_parser("index", help="the run's README: every seed table, our files, every claim's verdict",
                            description="The run's README: every seed table of the three works, our file, its command, "
                                        "and every claim's verdict.")
    parser.set_defaults(handler=printed(index_command))
    parser.add_argument("--run-dir", required=True, help="the run folder: its numbers/, tables/ and figures/ are read")
    parser.add_argument("--seeds", required=True, help="the seed tables and their claims (workflow/config/seed_tables.yaml)")
    parser.add_argument("--out", required=True, help="the README to write (e.g. <run-dir>/README.md)")
    parser.add_argument("--command", default="", help="the command that made the run, named in the README")
    parser.add_argument("--preface", default="", help="what a reader must know of the run's verdicts first (the "
                                                        "configuration's index_preface), at the README's top")
    parser.add_argument("--figure", help="also draw the forest plot of every test of the index here (PNG; the rule writes "
                                         "<run-dir>/figures/verdicts_forest.png, which the README then names)")
    parser.add_argument("--sources", help="the sources' numbers (default: source_numbers.yaml beside --seeds)")
    parser.add_argument("--catalog", help="the tables, rows and columns some configuration makes, which every claim's names "
                                          "must be among (reranker.formats.catalog; default: table_catalog.json beside --seeds, "
                                          "where there is one)")


def parser() -> argparse.ArgumentParser:
    """Every subcommand of the stage; each sets `handler`, the function that does it (not `run`: `figure ranks --run` is taken)."""
    top = argparse.ArgumentParser(prog="python -m reranker tables",
                                  description="Tables from saved evaluations (reranker.stages.evaluate JSON) or statistics.")
    sub = top.add_subparsers(dest="kind", required=True)
    add_table_parsers(sub)
    add_figure_parsers(sub)
    add_rerender_parser(sub)
    add_split_parser(sub)
    add_record_parsers(sub)
    add_index_parser(sub)
    return top


@exits_on_input_error("tables")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    overlay({}, args, {"--alpha": "significance.alpha"})  # checked as the configuration's alpha is
    return args.handler(args)
