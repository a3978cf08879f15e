"""A run folder's layout: where every file of a run goes, and which part of it is published.

Every path pattern is defined once: the suite's in `PATTERNS`, a paper's in its plugin's `paths`
(reranker.experiments), added with `Layout.with_paths`. Snakemake fills their `{wildcards}`, and
`Layout.path` fills them with values. A shared format: the workflow lays runs out with it, and
`compare` reads the published part with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reranker.formats.errors import ConfigError

# Under the run folder. `{run}` is a TREC run's name (bm25, birch.scifact.2S, maxp.scifact.passages ...).
PATTERNS = {
    "config": "config.yaml",
    "docs": "work/collections/{collection}/docs.jsonl",
    "topics": "work/collections/{collection}/topics.tsv",
    "qrels": "work/collections/{collection}/qrels.txt",
    "stats": "work/collections/{collection}/stats.json",
    "index": "work/indexes/{collection}",
    "trec_run": "work/runs/{collection}/{run}.run",
    "evidence": "work/runs/{collection}/{run}.run.evidence.jsonl.gz",  # beside its run (formats.evidence)
    "eval": "work/eval/{collection}/{run}.json",
    "work_folds": "work/folds/{collection}.json",
    "segments": "work/segments/{collection}/{first_stage}.k{k}.{unit}.jsonl",
    "scores": "work/scores/{collection}/{checkpoint}/{first_stage}.k{k}.{unit}.tsv",
    "scores_meta": "work/scores/{collection}/{checkpoint}/{first_stage}.k{k}.{unit}.tsv.meta.json",
    "scores_part": "work/scores/{collection}/{checkpoint}/{first_stage}.k{k}.{unit}.part{part}.tsv",
    "score_cache": "work/cache/scores",
    "filter_cache": "work/cache/filter",  # a positive filter's scores, by content (formats.array_cache)
    "checkpoint_dir": "work/checkpoints/{checkpoint}",
    "checkpoint_meta": "work/checkpoints/{checkpoint}/reranker.json",
    "benchmark": "benchmarks/{stage}/{name}.tsv",
    "log": "logs/{stage}/{name}.log",
    "table_spec": "work/tables/{table}.spec.json",  # a table's cells, written by Snakemake (formats.table_spec)
    # What a run publishes, mirrored in the reference folder (results/ for the default).
    "table": "tables/{table}.md",
    "table_stem": "tables/{table}",
    "numbers": "numbers/{table}.json",
    "figure": "figures/{figure}.png",
    "figure_captions": "figures/captions.json",  # every figure's caption (formats/captions.py)
    "folds": "folds/{collection}.json",
    # a run against the original's own (evaluate reproduction): published, not compared (compare reads numbers/*.json)
    "run_reproduction": "numbers/reproduction/{pair}.json",
    "comparison": "comparison.md",
    "seed_index": "README.md",  # every seed table, our files and whether the effect held (tables index)
    # a part of the default (`make run PART=name`): its own wall clock and resources, beside the other parts' once promoted
    "part_records": "parts/{part}",
    "part_run": "parts/{part}/run.json",
}
# What `compare` checks and `promote` copies: the published part of a run.
# A paper's own published folders are its plugin's `published`, which the promote adds (core.settings.promote).
PUBLISHED = ("tables", "numbers", "figures", "folds", "parts")  # parts/<name>/: a part's wall clock and resources
PUBLISHED_FILES = ("README.md",)  # the seed index, where made: promoted, never compared (report.html is neither)


@dataclass(frozen=True)
class Layout:
    """Paths of one run folder. `pattern` keeps wildcards for Snakemake; `path` fills them."""

    run_dir: str
    patterns: Mapping[str, str] = field(default_factory=lambda: MappingProxyType(PATTERNS))

    def with_paths(self, owner: str, paths: Mapping[str, str]) -> Layout:
        """This layout with `owner`'s patterns added (a plugin's `paths`); a name or pattern already laid out is refused."""
        clashes = [f"{name!r}" for name in paths if name in self.patterns]
        clashes += [f"{name!r} ({pattern})" for name, pattern in paths.items() if pattern in self.patterns.values()]
        if clashes:
            raise ConfigError(f"{owner}: its paths {', '.join(clashes)} are already in the run folder's layout")
        return Layout(self.run_dir, MappingProxyType({**self.patterns, **paths}))

    def pattern(self, name: str, /, **fixed: object) -> str:
        """The pattern under the run folder, with some fields filled (the rest stay `{wildcards}`)."""
        text = f"{self.run_dir}/{self.patterns[name]}"
        for key, value in fixed.items():
            text = text.replace("{" + key + "}", str(value))
        return text

    def path(self, name: str, /, **values: object) -> str:
        return f"{self.run_dir}/{self.patterns[name]}".format(**values)
