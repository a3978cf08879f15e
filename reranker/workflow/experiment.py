"""The workflow's logic, out of the Snakefile and tested: checkpoint lineage, table rows and captions.
Rules call these; no stage imports them (tests/test_layering.py). Paths: reranker.formats.layout, and each
paper plugin's `paths`. No paper is named here: what is a paper's comes from its plugin (EXP.plugins).
"""

from __future__ import annotations

import fnmatch
import os
import shlex
from collections.abc import Mapping
from functools import cached_property

from reranker import experiments
from reranker.core import settings as stage_settings
from reranker.core.config import CHECKPOINT_SETTINGS, checkpoint_config, slug, training_config
from reranker.core.registry import FIRST_STAGES
from reranker.corpora.base import Collection
from reranker.corpora.load import load_collection
from reranker.formats.errors import ConfigError
from reranker.formats.layout import Layout

# Snakemake starts, among the ready jobs, the set with the largest summed priority that fits the free
# cores. A job that takes two cores must outrank any two one-core jobs, or a one-core job that is ready
# first takes a core, and every two-core job waits until both cores come free at once. Measured on
# 2026-11-27 (the clean run of the shared start): a 14-minute one-core training ran alone while every
# index, retrieval and the shared start (two cores each) waited, one core idle for 14.0 min.
TRAIN_PRIORITY = 10  # a training: the longest jobs, start them as soon as their inputs exist
MULTI_CORE_PRIORITY = 25  # per core beyond the first: more than two one-core trainings together
EARLY_PRIORITY = 4  # a long training (start_early): before short ones, and with one of them still below a two-core job
SCORE_PRIORITY = 5  # Birch's score jobs (up to ~10 min on one core) before the theses' (about a minute), longest first


def job_priority(threads: int, base: int = 0) -> int:
    """A job's scheduling priority: its rule's base, plus MULTI_CORE_PRIORITY per extra core it takes."""
    return base + MULTI_CORE_PRIORITY * max(threads - 1, 0)


class Experiment:
    """One resolved configuration, as the DAG sees it: targets, checkpoints, rows and captions."""

    def __init__(self, config: Mapping):
        self.config = config
        registry = experiments.load(config.get("plugins") or ())
        layout = Layout(config["run_dir"])
        for name, cls in registry.items():  # each paper's own files beside the suite's (a clash is refused)
            layout = layout.with_paths(f"plugin {name}", cls.paths)
        self.layout = layout
        self.prefixes = [cls.checkpoint_prefix for cls in registry.values() if cls.checkpoint_prefix]
        self.slug_to_id = {slug(cid): cid for cid in config["collections"]}
        self._loaded: dict[str, Collection] = {}  # collections by id, as `loaded` built them
        self.plugins = experiments.active(self)  # the papers this configuration asks for, by name

    # Collections -------------------------------------------------------------------------------
    def collection(self, collection_slug: str) -> dict:
        return self.config["collections"][self.slug_to_id[collection_slug]]

    @property
    def provided_names(self) -> list[str]:
        """The names of the runs that come with collections (their `runs`), each once."""
        return list(dict.fromkeys(name for entry in self.config["collections"].values() for name in entry.get("runs") or {}))

    def provided_file(self, collection_slug: str, name: str) -> str:
        """The file of a run that comes with a collection (its `runs`)."""
        return self.collection(collection_slug)["runs"][name]["file"]

    @property
    def baseline_slugs(self) -> list[str]:
        return [slug(c) for c in self.config["baselines"]["collections"]]

    def collections_to_check(self) -> list[str]:
        """Collection ids whose raw files must be there before any job starts: the baselines', the provided runs'
        and each active paper's (its `collections()`), each once."""
        ids = [c for plugin in self.plugins.values() for c in plugin.collections()]
        return list(dict.fromkeys(ids + self.config["baselines"]["collections"] + self.config["baselines"]["provided_runs"]))

    def loaded(self, collection_id: str) -> Collection:
        """A collection of this configuration (reranker.corpora), loaded once: the Snakefile checks its files, and
        its export and folds rules declare them."""
        if collection_id not in self._loaded:
            self._loaded[collection_id] = load_collection(collection_id, self.config)
        return self._loaded[collection_id]

    def fold_overrides(self, collection_id: str, first_stage: str) -> bool:
        """Whether a first-stage run needs the collection's folds (per-fold parameters)."""
        return bool(self.config["retrieval"]["overrides"].get(collection_id, {}).get(first_stage, {}).get("folds"))

    # Checkpoints -------------------------------------------------------------------------------
    def checkpoint(self, name: str) -> dict:
        return checkpoint_config(self.config, name, self.prefixes)

    def is_finetuned(self, name: str) -> bool:
        return self.checkpoint(name)["source"] == "finetune"

    def checkpoint_ref(self, name: str) -> str:
        """What a stage loads: the fine-tuned directory, or the fetched id or directory."""
        return self.layout.path("checkpoint_dir", checkpoint=name) if self.is_finetuned(name) else self.checkpoint(name)["model"]

    def job_threads(self, name: str) -> int:
        """Threads of a checkpoint's train and score jobs."""
        return self.checkpoint(name).get("threads") or self.config["threads"]

    def train_priority(self, name: str) -> int:
        """A checkpoint's train job's scheduling priority: by its threads, and early if it is a long one."""
        early = EARLY_PRIORITY if self.checkpoint(name).get("start_early") else 0
        return job_priority(self.job_threads(name), TRAIN_PRIORITY + early)

    def score_priority(self, threads: int, longest: bool = False) -> int:
        """A score job's scheduling priority: by its threads, and the longest ones (Birch's) before the rest."""
        return job_priority(threads, SCORE_PRIORITY if longest else 0)

    def checkpoint_files(self, name: str) -> list[str]:
        """Inputs a checkpoint needs: a fine-tuned one's marker file; nothing for fetched ones."""
        return [self.layout.path("checkpoint_meta", checkpoint=name)] if self.is_finetuned(name) else []

    def hub_model(self, name: str) -> str:
        return stage_settings.hub_model(self.config, name)

    def lineage(self, name: str) -> str:
        """A checkpoint in words: its Hugging Face id, or its name and what it was fine-tuned from and on."""
        stages = self.training_stages(name)
        return self.hub_model(name) if not stages else f"`{name}` ({self.hub_model(name)} fine-tuned on {', then '.join(stages)})"

    def training_stages(self, name: str) -> list[str]:
        """What a checkpoint was fine-tuned on, stage by stage through its fine-tuned bases: a collection, or
        the collections one stage shuffled together (`mix`), joined by ' + '."""
        entry = self.checkpoint(name)
        if entry["source"] != "finetune":
            return []
        own = [" + ".join(entry["train_on"])] if entry.get("mix") else list(entry["train_on"])
        return self.training_stages(entry["base"]) + own

    def training_chain(self, name: str) -> list[str]:
        """The collections a checkpoint was fine-tuned on, in order, through its fine-tuned bases."""
        entry = self.checkpoint(name)
        return self.training_chain(entry["base"]) + list(entry["train_on"]) if entry["source"] == "finetune" else []

    def applies_to(self, name: str, collection_id: str) -> bool:
        """Cross-domain as in the paper: a checkpoint never scores a collection it was trained on."""
        return collection_id not in self.training_chain(name)

    def label(self, name: str) -> str:
        return self.checkpoint(name).get("label", name)

    def finetuned(self, names) -> list[str]:
        return [name for name in names if self.is_finetuned(name)]

    def training_sources(self, name: str) -> list[tuple[str, dict[str, str]]]:
        """(collection id, its files) of each `train_on` collection: docs, topics, qrels and the run the
        negatives come from (training.negatives_from)."""
        negatives = training_config(self.config, name)["negatives_from"]
        sources = []
        for cid in self.checkpoint(name)["train_on"]:
            s = slug(cid)
            sources.append((cid, {"docs": self.layout.path("docs", collection=s),
                                  "topics": self.layout.path("topics", collection=s),
                                  "qrels": self.layout.path("qrels", collection=s),
                                  "run": self.layout.path("trec_run", collection=s, run=negatives)}))
        return sources

    def training_inputs(self, name: str) -> list[str]:
        """Files a training job reads: its base's marker (if fine-tuned), each source's files, and the
        folds of a checkpoint trained on one fold's training queries."""
        files = self.checkpoint_files(self.checkpoint(name)["base"])
        files += [f for other in self.named_checkpoints(name).values() for f in self.checkpoint_files(other)]
        files += [path for _, paths in self.training_sources(name) for path in paths.values()]
        return files + ([self.fold_file(name)] if self.checkpoint(name).get("train_fold") else [])

    def named_checkpoints(self, name: str) -> dict[str, str]:
        """The checkpoints a fine-tuned checkpoint's training settings name (config.CHECKPOINT_SETTINGS: its
        teacher, the checkpoint its head starts from, its positives' filter), by setting."""
        if not self.is_finetuned(name):
            return {}
        training = training_config(self.config, name)
        return {setting: training[setting] for setting in CHECKPOINT_SETTINGS if training[setting]}

    def head_from(self, name: str) -> str | None:
        """The checkpoint a fine-tuned checkpoint's head starts from (training.head_from), if it names one."""
        return self.named_checkpoints(name).get("head_from")

    def model_flags(self, name: str) -> str:
        """A training job's --base and a flag per checkpoint its settings name (--teacher, --head-from,
        --positive-filter): the folders (or hub ids) it starts from, learns from, takes its head from... With a
        positive filter, the run folder's store of its scores (--filter-cache): every row trained on the same pairs
        asks the filter the same, and scoring them took most of a short training (a store, not an output)."""
        named = self.named_checkpoints(name)
        flags = [f"--base {shlex.quote(self.checkpoint_ref(self.checkpoint(name)['base']))}"]
        flags += [f"--{setting.replace('_', '-')} {shlex.quote(self.checkpoint_ref(other))}" for setting, other in named.items()]
        flags += [f"--filter-cache {shlex.quote(self.layout.path('filter_cache'))}"] if "positive_filter" in named else []
        return " ".join(flags)

    def fold_file(self, name: str) -> str:
        """The folds JSON of a per-fold checkpoint's collection."""
        return self.layout.path("work_folds", collection=slug(self.checkpoint(name)["train_on"][0]))

    def retrieval_inputs(self, collection_slug: str, first_stage: str) -> dict[str, str]:
        """Per-fold parameters need the collection's folds."""
        if self.fold_overrides(self.slug_to_id[collection_slug], first_stage):
            return {"folds": self.layout.path("work_folds", collection=collection_slug)}
        return {}

    def reproduction_inputs(self, pair: str) -> dict[str, str]:
        """A run-level reproduction pair's files: the original's run, ours (the first stage's run the workflow makes,
        or the collection's provided run) and the judgments that score both (a provided run's own, as its evaluation
        takes them; else the exported ones, grades applied)."""
        entry = self.config["reproduction"][pair]
        cid = entry["collection"]
        if entry["run"] == "provided":
            collection = self.config["collections"][cid]
            return {"original": entry["original"], "run": collection["run"], "qrels": collection["qrels"]}
        return {"original": entry["original"], "run": self.layout.path("trec_run", collection=slug(cid), run=entry["run"]),
                "qrels": self.layout.path("qrels", collection=slug(cid))}

    # What a stage reads from the resolved file (reranker.core.settings, which the stage calls too): rules
    # list it as params, so that Snakemake reruns a job when one of its own settings changes.
    def settings(self, stage: str, collection: str | None = None, **keys) -> dict:
        return stage_settings.of(stage, self.config, collection=self.slug_to_id[collection] if collection else None, **keys)

    # The baselines table (every paper's collections) ------------------------------------------
    def baseline_spec(self) -> dict[str, list[dict]]:
        """The baselines table's cells (reranker.formats.table_spec): every first stage on every baseline
        collection, then the provided runs."""
        base = [{"group": FIRST_STAGES[m].label, "row": self.slug_to_id[s], "path": self.layout.path("eval", collection=s, run=m)}
                for s in self.baseline_slugs for m in FIRST_STAGES]
        provided = [{"group": FIRST_STAGES[self.config["collections"][cid]["run_model"]].label, "row": f"{cid} (provided run)",
                     "path": self.layout.path("eval", collection=slug(cid), run="provided")}
                    for cid in self.config["baselines"]["provided_runs"]]
        return {"eval": base + provided}

    def stats_spec(self) -> dict[str, list[dict]]:
        """The dataset statistics table's cells: each baseline collection's stats.json."""
        return {"stats": [{"group": self.slug_to_id[s], "path": self.layout.path("stats", collection=s)} for s in self.baseline_slugs]}

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        """Every table's cells by table name (the spec files of workflow/rules/tables.smk): ours, then each paper's."""
        specs = {"baselines": self.baseline_spec(), "dataset_stats": self.stats_spec()}
        for plugin in self.plugins.values():
            specs.update(plugin.table_specs())
        return specs

    @cached_property
    def specs(self) -> dict[str, dict[str, list[dict]]]:
        """`table_specs`, computed once: what the spec files hold, and where the tables' rules find their inputs."""
        return self.table_specs()

    def spec_files(self, table: str, *kinds: str) -> list[str]:
        """The files a table's spec names (in its records of `kinds`; of every kind where none), each once, in
        the spec's order: its rule's inputs, so that the DAG and the table read the same files."""
        spec = self.specs[table]
        return list(dict.fromkeys(record["path"] for kind in (kinds or spec) for record in spec.get(kind, ())
                                  if "path" in record))

    def baselines_caption(self) -> str:
        """Every first stage with its parameters; an RM3 stage names its k1 and b only where they differ
        from the plain BM25 stage's."""
        models = self.config["retrieval"]["models"]
        plain = next((params for m, params in models.items() if not FIRST_STAGES[m].rm3), {})
        described = []
        for model in FIRST_STAGES:
            params = models.get(model, {})
            keys = [k for k in ("k1", "b") if not FIRST_STAGES[model].rm3 or params.get(k) != plain.get(k)]
            keys += [k for k in ("fb_terms", "fb_docs", "original_query_weight") if FIRST_STAGES[model].rm3]
            described.append(f"{FIRST_STAGES[model].label} ({', '.join(f'{k}={params.get(k)}' for k in keys)})")
        listed = ", ".join(described[:-1]) + " and " + described[-1] if len(described) > 1 else described[0]
        return f"Lucene baselines (pyserini), depth {self.config['retrieval']['depth']}: {listed}" + self.overrides_text()

    def overrides_text(self) -> str:
        """`retrieval.overrides` in words, e.g. "; overrides: cranfield BM25+RM3 fold 1 fb_terms=20"."""
        def words(params: Mapping) -> str:
            return ", ".join(f"{k}={v}" for k, v in params.items())

        parts = []
        for cid, models in self.config["retrieval"]["overrides"].items():
            for model, params in models.items():
                label = f"{cid} {FIRST_STAGES[model].label}"
                plain = {k: v for k, v in params.items() if k != "folds"}
                parts += [f"{label} {words(plain)}"] if plain else []
                parts += [f"{label} fold {fold} {words(values)}" for fold, values in params.get("folds", {}).items()]
        return f"; overrides: {'; '.join(parts)}" if parts else ""


    # Parts: the run cut into batch jobs -------------------------------------------------------
    def part_targets(self, published: list[str]) -> list[str]:
        """The files of `published` (every table, figure and numbers file a whole run makes) that the configured part
        makes (`parts`, `part`); all of them where no part is set. A pattern that matches nothing is refused: a part
        that silently made nothing would promote nothing and say so nowhere."""
        part = self.config.get("part")
        if not part:
            return list(published)
        parts = self.config.get("parts") or {}
        if part not in parts:
            raise ConfigError(f"part: {part!r} is not one of this configuration's parts ({', '.join(parts) or 'none'})")
        relative = {path: os.path.relpath(path, self.config["run_dir"]) for path in published}
        chosen = []
        for pattern in parts[part]["outputs"]:
            found = [path for path, rel in relative.items() if fnmatch.fnmatchcase(rel, pattern)]
            if not found:
                raise ConfigError(f"parts: {part}: {pattern!r} matches none of the run's published files")
            chosen += found
        return list(dict.fromkeys(chosen))
