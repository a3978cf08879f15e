"""What every paper's plugin has, and all the core calls on one: its configuration section and the resolve hooks
over it, its rules file, the tables and pages it adds, the jobs the shared rules write for it (segment and score,
tables, figures), the collections the DAG checks, the checkpoints it generates and the part of a run's wall clock
that is its own. What a paper's own rules call on it is that paper's
(tests/test_plugins.py checks each rules file against its own plugin class).

A plugin is built over the DAG's `Experiment` (reranker.workflow.experiment), which it reads for the run
folder's layout and for checkpoint lineage; stages never import plugins (tests/test_layering.py). Its class is
also the section `reranker.core.config.resolve` composes: its schema under its name, and its resolve hooks
(classmethods, pure functions of the configuration): `generate`, `check`, `resolved`, `study`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from reranker.core import settings
from reranker.core.config import SECTIONS_DIR, NamedRows, section_schema, section_study, slug

# A precision setting in a caption's words (the run's metas record the dtype each job used).
PRECISION_WORDS = {"exact": "fp32", "fast": "bf16 (fp16 on GPUs without bf16)",
                   "auto": "bf16 where the CPU (AMX, avx512_bf16) or GPU has it, else fp32"}


@dataclass(frozen=True)
class FigureJob:
    """A figure the suite's figure rule draws with `tables figure ARGS` (workflow/rules/tables.smk): its rule's
    name, the files it reads, the arguments, its caption, and any further params that rerun it when they change."""

    rule: str
    inputs: list[str]
    args: str
    caption: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableJob:
    """A table the suite's table rule writes with `tables COMMAND` (workflow/rules/tables.smk), which adds the
    sources' numbers (`{input.sources}`), the table's spec (`{input.spec}`), its files (`{output.numbers}`, and
    `{params.out}`: their stem) and its log: its rule's name, the further files it reads by name, the command in
    Snakemake's shell syntax, and the params it names (whose values rerun it when they change)."""

    rule: str
    inputs: Mapping[str, str | list[str]]
    command: str
    params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class StageJob:
    """A paper's job of a reranking stage (segment, score) that the suite's middle rule writes as `python -m
    reranker COMMAND 2> {log}` (workflow/rules/rerank.smk), which adds `{params.config}`: its rule's name, the
    stage (its log's and benchmark's folder), the files it reads and writes by name (layout patterns, wildcards
    kept; an input may be a function of the wildcards), its log's name, the command in Snakemake's shell syntax,
    the params it names, and its threads, priority and GPUs (numbers, or functions of the wildcards)."""

    rule: str
    stage: str
    inputs: Mapping[str, object]
    outputs: Mapping[str, str]
    name: str
    command: str
    params: Mapping[str, object] = field(default_factory=dict)
    threads: object = 1
    priority: object = 0
    gpus: int = 0


def significance(config: Mapping) -> str:
    """The significance level and correction, as flags of `tables results` (a generic tool: they reach it so)."""
    return f"--alpha {config['significance']['alpha']} --correction {config['significance']['correction']}"


class Plugin:
    """One paper's tables. A subclass names itself in its class line, e.g.
    `class NTNU(Plugin, name="ntnu", wall_clock_part="ntnu", checkpoint_prefix="ntnu-")`, and its module names
    it `PLUGIN = NTNU` (reranker.experiments.load reads it)."""

    name: ClassVar[str]  # the registry key, and the configuration section it reads
    about: ClassVar[str]  # one line: the paper and what it builds (default: its module docstring's first line)
    rules: ClassVar[str]  # its Snakemake rules, relative to the Snakefile (default: workflow/rules/<name>.smk)
    # A regex over Snakemake job names (rule and wildcards) of the jobs that are this paper's own: its
    # part of a run's wall clock (`tables wallclock --part`); None where it has no part of its own.
    wall_clock_part: ClassVar[str | None] = None
    # The prefix of the checkpoints it generates (one per fold or row): one resources row for them all.
    checkpoint_prefix: ClassVar[str | None] = None
    # Its section's named entries: filled with their schema defaults, and the rows an overlay may drop.
    named_rows: ClassVar[NamedRows | None] = None
    # Its section's JSON schema, composed into the configuration's under its name (its `#/$defs/...` are the
    # suite's): by default workflow/schemas/sections/<name>.yaml; None: any mapping.
    section_schema: ClassVar[dict | None] = None
    # Its files in a run folder: layout name -> pattern under the run folder (reranker.formats.layout), added to
    # the suite's; a name or pattern the suite (or another plugin) has already is refused.
    paths: ClassVar[dict[str, str]] = {}
    # Those of its folders (top-level patterns of `paths`) that a promote copies into the reference, beside the
    # suite's tables, numbers and figures: the resolved configuration's `published` carries them to the stage.
    published: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, name: str, about: str | None = None, rules: str | None = None,
                          wall_clock_part: str | None = None, checkpoint_prefix: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.name = name
        cls.about = about or (sys.modules[cls.__module__].__doc__ or "").strip().split("\n")[0]
        cls.rules = rules or f"workflow/rules/{name}.smk"
        cls.wall_clock_part, cls.checkpoint_prefix = wall_clock_part, checkpoint_prefix
        if "section_schema" not in cls.__dict__ and (SECTIONS_DIR / f"{name}.yaml").exists():
            cls.section_schema = section_schema(name)

    def __init__(self, experiment):
        self.exp = experiment  # the DAG's Experiment: layout, checkpoints and their lineage
        self.config = experiment.config
        self.layout = experiment.layout

    @classmethod
    def section_of(cls, config: Mapping) -> dict:
        """Its configuration section: the top-level one under its name."""
        return config.get(cls.name) or {}

    @property
    def section(self) -> dict:
        return self.section_of(self.config)

    @classmethod
    def enabled(cls, config: Mapping) -> bool:
        """Whether the configuration asks for this paper's tables."""
        return bool(cls.section_of(config).get("collection"))

    @property
    def slug(self) -> str:
        """Its collection's slug (a section without `collection` has none)."""
        return slug(self.section["collection"])

    @classmethod
    def checkpoints(cls, config: Mapping) -> dict:
        """Checkpoint entries the section implies (per fold, per row); called only for an enabled section."""
        return {}

    @classmethod
    def generate(cls, config: Mapping) -> dict:
        """The checkpoints a section the configuration asks for implies, added when a config is resolved;
        none for one it leaves off."""
        return cls.checkpoints(config) if cls.enabled(config) else {}

    @classmethod
    def check(cls, config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
        """The cross-checks of a section the configuration asks for; nothing for one it leaves off."""
        return cls.cross_check(config) if cls.enabled(config) else ([], [])

    @classmethod
    def cross_check(cls, config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
        """Problems with the section the schema cannot see, and the checkpoint names it uses (checked to exist)."""
        return [], []

    @classmethod
    def resolved(cls, config: Mapping) -> dict:
        """Values it fills in a configuration being resolved (merged over it; before its checkpoints are
        generated): settings whose default depends on its section. None by default."""
        return {}

    @classmethod
    def study(cls, config: Mapping) -> dict | None:
        """Its entry of the resolved `studies:` (a run's research goal, reranker.core.run_metadata): by default
        what reranker.core.config.section_study reads of its section."""
        return section_study(cls.name, cls.section_of(config))

    def collections(self) -> list[str]:
        """Collection ids whose raw files the DAG checks before any job starts, beyond the baselines' (its own
        rules may check more)."""
        return []

    def outputs(self) -> list[str]:
        """Every table and figure it publishes: compared with the reference and built by `all`."""
        return []

    def pages(self) -> list[str]:
        """Pages it adds to the report, neither compared nor promoted: built before the resources table (which
        counts their jobs)."""
        return []

    def figure_jobs(self) -> dict[str, FigureJob]:
        """Its figures that the suite's figure rule draws (`tables figure`), by figure name; in the report under
        its class name."""
        return {}

    def stage_jobs(self) -> list[StageJob]:
        """Its segment and score jobs, which the suite's middle rule writes (workflow/rules/rerank.smk)."""
        return []

    def score_job(self, rule: str, inputs: Mapping[str, object], outputs: Mapping[str, str], name: str, command: str,
                  threads: int | None = None, **params) -> StageJob:
        """A per-checkpoint score job (the `{checkpoint}` wildcard): the checkpoint's files among its inputs, params
        that rerun it when its checkpoint or its section's score settings change, the GPUs of the configuration's
        `score`, and threads by the checkpoint, with a priority by those (a two-core job before one-core ones). A
        paper that gives `threads` (Birch: the configuration's `score.threads`) scores longest: its jobs go first."""
        by_checkpoint = lambda w: self.exp.job_threads(w.checkpoint)  # noqa: E731
        priority = (self.exp.score_priority(threads, longest=True) if threads
                    else lambda w: self.exp.score_priority(by_checkpoint(w)))
        return StageJob(
            rule, "score", {"checkpoint": lambda w: self.exp.checkpoint_files(w.checkpoint), **inputs}, outputs,
            name, command, {"settings": lambda w: self.exp.settings("score", checkpoint=w.checkpoint, section=self.name),
                            "model": lambda w: self.exp.checkpoint_ref(w.checkpoint), **params},
            threads or by_checkpoint, priority, self.config["score"]["gpus"])

    def table_jobs(self) -> dict[str, TableJob]:
        """Its tables that the suite's table rule writes, by table name; in the report under its class name."""
        return {}

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        """The cells of its tables and sweep figures by name (reranker.formats.table_spec records): Snakemake
        writes each to its spec file (workflow/rules/tables.smk), which the table's rule hands `--spec`."""
        return {}


def section_problems(config: Mapping, name: str, collections: tuple[str, ...] = ("collection",)
                     ) -> tuple[list[str], list[tuple[str, str]]]:
    """What every paper's section must get right: the collections it names exist, its `measures` are
    computed on its collection (the suite's plus the collection's own), and its `base` (if any) is
    used; the checkpoint names go back to be checked to exist."""
    section, known_collections = config[name], config["collections"]
    problems = [f"  {name}/{key}: unknown collection {section[key]!r}" for key in collections
                if section[key] not in known_collections]
    if section["collection"] in known_collections:  # else reported as an unknown collection
        known = settings.measures(config, section["collection"])
        problems += [f"  {name}/measures: {m!r} is not among the measures of {section['collection']} ({', '.join(known)})"
                     for m in section["measures"] if m not in known]
    return problems, [(f"{name}/base", section["base"])] if section.get("base") else []
