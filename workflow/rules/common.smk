# Names the rules share. Rules stay thin: each calls one `python -m reranker <stage>` with the
# resolved configuration (settings) and the files it reads and writes (paths). `python` is the
# environment's: the suite's venv (the Makefile puts it first on PATH), conda's or the container's.
import os
import shlex

from reranker.core.registry import AGGREGATORS, FIRST_STAGES, RANKINGS, UNITS, wildcard_pattern
from reranker.experiments.base import significance

pattern = EXP.layout.pattern  # a path pattern under the run folder, wildcards kept
PATH = EXP.layout.path  # the same, filled
ENV = "../../envs/reranker.yaml"  # for --use-conda / --sdm conda
THREADS = CFG["threads"]


wildcard_constraints:
    collection=wildcard_pattern(EXP.slug_to_id),
    model=wildcard_pattern(FIRST_STAGES),
    checkpoint=wildcard_pattern(CFG["checkpoints"]),
    unit=wildcard_pattern(UNITS),
    method=wildcard_pattern(AGGREGATORS),
    n="[1-3]",
    part="[0-9]+-of-[0-9]+",


collection_id = lambda w: EXP.slug_to_id[w.collection]
settings = EXP.settings  # what a stage reads from CONFIG_FILE, as params: a change reruns the job
spec_files = EXP.spec_files  # the files a table's spec names (tables.smk writes it): its rule's inputs
# The score cache is shared by every score job (content-addressed, SQLite WAL): a store, not an output.
CACHE = PATH("score_cache")
# The table builder is a generic tool: the significance level and correction reach it as flags.
# The sources' own numbers, shown beside ours in every table of theirs.
SOURCE_NUMBERS = "workflow/config/source_numbers.yaml"
SIGNIFICANCE = significance(CFG)


def looped_shell(running, command):
    """The shell text of each job a loop over plugins' jobs defines. Snakemake evaluates the shell expression twice,
    once as it defines the job's rule and again as a job runs (in a function whose argument `rule` names the running
    one), by which time the loop variable names the loop's last job. So at execution the text is the one the
    running one stored at definition (`running` is None there, `locals().get("rule")` at module level), which a
    derived one (Snakemake's `use` of another) copies from its base under its own name."""
    if running is not None:
        return workflow.get_rule(getattr(running, "name", running)).shellcmd
    return command


def table_report(path, category):
    """A table's CSV in `snakemake --report`, captioned by its rule's params.caption."""
    return report(path, caption="../report/table.rst", category=category)


def table_files(table, category, formats=("csv", "html", "tex")):
    """A table's files, as its rule's named outputs: the Markdown, each of `formats` (the HTML in the report) and
    its numbers."""
    stem = PATH("table_stem", table=table)
    files = {"md": PATH("table", table=table)}
    files |= {f: table_report(f"{stem}.html", category) if f == "html" else f"{stem}.{f}" for f in formats}
    return files | {"numbers": PATH("numbers", table=table)}


def figure_report(path, category):
    """A figure in `snakemake --report`, captioned by its rule's params.figure_caption."""
    return report(path, caption="../report/figure.rst", category=category)
