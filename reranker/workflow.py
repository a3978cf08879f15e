"""The workflow's logic, out of the Snakefile and tested: checkpoint lineage, table rows and captions.
Rules call these; no stage imports them (tests/test_layering.py). Paths: reranker.formats.layout.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from reranker import settings as stage_settings
from reranker.config import (
    checkpoint_config,
    ntnu_checkpoint,
    pretrained_checkpoint,
    radboud_checkpoint,
    slug,
    training_config,
)
from reranker.formats.layout import PATTERNS, PUBLISHED, PUBLISHED_FILES, Layout  # noqa: F401 (the rules' names)
from reranker.registry import AGGREGATORS, FIRST_STAGES


def ranking_label(ranking: str) -> str:
    """A ranking's words in a row label: "by argmax", "by level 4's score"."""
    if ranking.startswith("label"):
        return f"by level {ranking.removeprefix('label')}'s score"
    return "by argmax" if ranking == "argmax" else "by the relevant logit"


# How a configured precision reads in a caption: the setting, not the machine, so that a caption
# reads the same wherever the table is rebuilt.
PRECISION_WORDS = {"exact": "fp32", "fast": "bf16 (fp16 on GPUs without bf16)",
                   "auto": "bf16 where the CPU (AMX, avx512_bf16) or GPU has it, else fp32"}


class Experiment:
    """One resolved configuration, as the DAG sees it: targets, checkpoints, rows and captions."""

    def __init__(self, config: Mapping):
        self.config = config
        self.layout = Layout(config["run_dir"])
        self.birch = config["birch"]
        self.first_stage = self.birch["first_stage"]
        self.k = config["segment"]["candidates"]
        self.slug_to_id = {slug(cid): cid for cid in config["collections"]}

    # Collections -------------------------------------------------------------------------------
    def collection(self, collection_slug: str) -> dict:
        return self.config["collections"][self.slug_to_id[collection_slug]]

    def measures_for(self, collection_id: str) -> list[str]:
        return stage_settings.measures(self.config, collection_id)

    @property
    def target_slugs(self) -> list[str]:
        return [slug(t) for t in self.birch["targets"]]

    @property
    def baseline_slugs(self) -> list[str]:
        return [slug(c) for c in self.config["baselines"]["collections"]]

    @property
    def provided_slugs(self) -> list[str]:
        return [slug(c) for c in self.config["baselines"]["provided_runs"]]

    def fold_overrides(self, collection_id: str, first_stage: str) -> bool:
        """Whether a first-stage run needs the collection's folds (per-fold parameters)."""
        return bool(self.config["retrieval"]["overrides"].get(collection_id, {}).get(first_stage, {}).get("folds"))

    # Checkpoints -------------------------------------------------------------------------------
    def checkpoint(self, name: str) -> dict:
        return checkpoint_config(self.config, name)

    def is_finetuned(self, name: str) -> bool:
        return self.checkpoint(name)["source"] == "finetune"

    def checkpoint_ref(self, name: str) -> str:
        """What a stage loads: the fine-tuned directory, or the fetched id or directory."""
        return self.layout.path("checkpoint_dir", checkpoint=name) if self.is_finetuned(name) else self.checkpoint(name)["model"]

    def job_threads(self, name: str) -> int:
        """Threads of a checkpoint's train and score jobs."""
        return self.checkpoint(name).get("threads") or self.config["threads"]

    def checkpoint_files(self, name: str) -> list[str]:
        """Inputs a checkpoint needs: a fine-tuned one's marker file; nothing for fetched ones."""
        return [self.layout.path("checkpoint_meta", checkpoint=name)] if self.is_finetuned(name) else []

    def hub_model(self, name: str) -> str:
        return stage_settings.hub_model(self.config, name)

    def lineage(self, name: str) -> str:
        """A checkpoint in words: its Hugging Face id, or its name and what it was fine-tuned from and on."""
        chain = self.training_chain(name)
        return self.hub_model(name) if not chain else f"`{name}` ({self.hub_model(name)} fine-tuned on {', then '.join(chain)})"

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

    @property
    def tokenizer(self) -> str:
        return stage_settings.tokenizer(self.config)

    @property
    def units(self) -> list[str]:
        return ["sentences"] + (["passages"] if self.birch["passage_checkpoint"] and self.birch["aggregation"] else [])

    def training_sources(self, name: str) -> list[tuple[str, dict[str, str]]]:
        """(collection id, its files) of each `train_on` collection: docs, topics, qrels and the BM25 run."""
        sources = []
        for cid in self.checkpoint(name)["train_on"]:
            s = slug(cid)
            sources.append((cid, {"docs": self.layout.path("docs", collection=s),
                                  "topics": self.layout.path("topics", collection=s),
                                  "qrels": self.layout.path("qrels", collection=s),
                                  "run": self.layout.path("trec_run", collection=s, run="bm25")}))
        return sources

    def training_inputs(self, name: str) -> list[str]:
        """Files a training job reads: its base's marker (if fine-tuned), each source's files, and the
        folds of a checkpoint trained on one fold's training queries."""
        files = self.checkpoint_files(self.checkpoint(name)["base"])
        teacher = self.teacher(name)
        files += self.checkpoint_files(teacher) if teacher else []
        files += [path for _, paths in self.training_sources(name) for path in paths.values()]
        return files + ([self.fold_file(name)] if self.checkpoint(name).get("train_fold") else [])

    def teacher(self, name: str) -> str | None:
        """A fine-tuned checkpoint's distillation teacher (a checkpoint name), if it has one."""
        return training_config(self.config, name)["teacher"] if self.is_finetuned(name) else None

    def model_flags(self, name: str) -> str:
        """A training job's --base and --teacher: the folders (or hub ids) it starts from and learns from."""
        base, teacher = self.checkpoint(name)["base"], self.teacher(name)
        return f"--base {shlex.quote(self.checkpoint_ref(base))}" + (
            f" --teacher {shlex.quote(self.checkpoint_ref(teacher))}" if teacher else "")

    def fold_file(self, name: str) -> str:
        """The folds JSON of a per-fold checkpoint's collection."""
        return self.layout.path("work_folds", collection=slug(self.checkpoint(name)["train_on"][0]))

    def retrieval_inputs(self, collection_slug: str, first_stage: str) -> dict[str, str]:
        """Per-fold parameters need the collection's folds."""
        if self.fold_overrides(self.slug_to_id[collection_slug], first_stage):
            return {"folds": self.layout.path("work_folds", collection=collection_slug)}
        return {}

    # The Radboud thesis' tables ----------------------------------------------------------------
    @property
    def radboud(self) -> dict | None:
        section = self.config["radboud"]
        return section if section["collection"] else None

    @property
    def radboud_slug(self) -> str:
        return slug(self.radboud["collection"])

    def radboud_ranking_tables(self) -> list[str]:
        return [t for t in self.radboud["tables"] if any(t in v["tables"] for v in self.radboud["variants"].values())]

    def radboud_pretraining_tables(self) -> list[str]:
        return [t for t in self.radboud["tables"] if any(t in p["tables"] for p in self.radboud["pretraining"].values())]

    def radboud_point_label(self, point: int) -> str:
        """A grid point's column: its learning rate and epochs."""
        training = training_config(self.config, radboud_checkpoint(next(iter(self.radboud["variants"])), point,
                                                                   self.radboud["folds"][0]))
        epochs = training["epochs"]
        return f"lr {training['learning_rate']:g}, {epochs:g} epoch{'s' if epochs != 1 else ''}"

    @property
    def radboud_points(self) -> list[int]:
        return list(range(1, len(self.radboud["grid"]) + 1))

    def radboud_rows(self, table: str) -> list[tuple[str, str, str]]:
        """(row label, variant, ranking) of a ranking table, in the configuration's order."""
        rows = []
        for name, spec in self.radboud["variants"].items():
            if table in spec["tables"]:
                rankings = spec["rankings"]
                rows += [(spec["label"] if len(rankings) == 1 and r == "relevant" else f"{spec['label']}, {ranking_label(r)}",
                          name, r) for r in rankings]
        return rows

    def radboud_run(self, variant: str, point: int, ranking: str) -> str:
        return f"radboud.{variant}.g{point}.{ranking}"

    def radboud_fold_scores(self, variant: str, point: int, ranking: str) -> list[str]:
        section = self.radboud
        return [self.layout.path("radboud_scores", collection=self.radboud_slug, first_stage=section["first_stage"],
                                 k=section["candidates"], ranking=ranking,
                                 checkpoint=radboud_checkpoint(variant, point, fold)) for fold in section["folds"]]

    def radboud_evals(self, table: str) -> list[str]:
        first = self.layout.path("eval", collection=self.radboud_slug, run=self.radboud["first_stage"])
        return [first] + [self.layout.path("eval", collection=self.radboud_slug, run=self.radboud_run(v, point, r))
                          for point in self.radboud_points for _, v, r in self.radboud_rows(table)]

    def radboud_specs(self, table: str) -> str:
        first_label = FIRST_STAGES[self.radboud["first_stage"]].label
        first = self.layout.path("eval", collection=self.radboud_slug, run=self.radboud["first_stage"])
        specs = []
        for point in self.radboud_points:
            group = self.radboud_point_label(point)
            specs.append(f"{group}:{first_label}:{first}")
            specs += [f"{group}:{label}:{self.layout.path('eval', collection=self.radboud_slug, run=self.radboud_run(v, point, r))}"
                      for label, v, r in self.radboud_rows(table)]
        return " ".join(shlex.quote(spec) for spec in specs)

    def radboud_baseline_row(self, table: str) -> str | None:
        """The baseline reranker's row (the first variant's first ranking), if the table has it."""
        rows = self.radboud_rows(table)
        first = next(iter(self.radboud["variants"]))
        return next((label for label, v, _ in rows if v == first), None)

    def radboud_checkpoint_metas(self, table: str) -> list[tuple[str, str]]:
        """(label, reranker.json) of every per-fold checkpoint behind a ranking table (grid point 1)."""
        variants = dict.fromkeys(v for _, v, _ in self.radboud_rows(table))
        return [(self.radboud["variants"][v]["label"], self.layout.path("checkpoint_meta", checkpoint=radboud_checkpoint(v, 1, f)))
                for v in variants for f in self.radboud["folds"]]

    def radboud_pretrainings(self, table: str) -> list[tuple[str, str]]:
        """(label, reranker.json) of the pre-trained checkpoints of a pre-training table."""
        return [(spec.get("label", name), self.layout.path("checkpoint_meta", checkpoint=pretrained_checkpoint(name)))
                for name, spec in self.radboud["pretraining"].items() if table in spec["tables"]]

    def radboud_caption(self, table: str) -> str:
        section = self.radboud
        chain = self.training_chain(section["base"])
        base = self.hub_model(section["base"]) + (f" fine-tuned on {' → '.join(chain)} (`{section['base']}`), then per fold"
                                                  if chain else "")
        first = FIRST_STAGES[section["first_stage"]].label
        training = training_config(self.config, radboud_checkpoint(next(iter(section["variants"])), 1, section["folds"][0]))
        grid = "; ".join(self.radboud_point_label(p) for p in self.radboud_points)
        trained, scored = PRECISION_WORDS[training["precision"]], PRECISION_WORDS[section["precision"]]
        arithmetic = f"{trained}, training and scoring" if trained == scored else f"{trained} training, {scored} scoring"
        threads = f"{section['threads']} CPU thread{'s' if section['threads'] != 1 else ''}"
        return (f"{section['tables'][table]}. {section['collection']}, {first} top {section['candidates']} reranked "
                f"(the rest kept in order), one classifier per fold trained on that fold's training queries "
                f"({len(section['folds'])} fold{'s' if len(section['folds']) != 1 else ''}, test queries pooled); model: {base} "
                f"(max length {training['max_length']}, batch {training['batch_size']}, "
                f"{training['negatives_per_positive']} negatives per positive from the top {training['negatives_depth']}, "
                f"the step with the lowest held-out loss on {training['validation_fraction']:.0%} of the training queries); "
                f"grid: {grid}. Hardware: {arithmetic}; {threads} per job (the machine: the numbers' provenance). "
                f"nDCG gains: Cranfield's codes mapped by collections.yaml `grades` (1 complete answer -> 4 .. "
                f"4 minimum interest -> 1, -1 -> 0); nDCG@20 (thesis): the thesis' own measure, the -1 document "
                f"counted as a complete answer (reranker/measures/radboud.py).")

    # The NTNU thesis' tables ------------------------------------------------------------------
    @property
    def ntnu(self) -> dict | None:
        section = self.config["ntnu"]
        return section if section["collection"] else None

    @property
    def ntnu_slug(self) -> str:
        return slug(self.ntnu["collection"])

    @property
    def ntnu_depth(self) -> int:
        """Candidates segmented: the largest R of the tables and of the sweep."""
        return max([self.ntnu["candidates"]] + (self.ntnu["candidate_sweep"] if self.ntnu["sweep_figure"] else []))

    def ntnu_run(self, model: str, aggregation: str, candidates: int | None = None) -> str:
        """A reranked run: at the tables' R, or (the sweep) at R out of the deepest scoring."""
        return f"ntnu.{model}.{aggregation}" + (f".r{candidates}" if candidates is not None else "")

    def ntnu_eval(self, run: str) -> str:
        return self.layout.path("eval", collection=self.ntnu_slug, run=run)

    def ntnu_rows(self, table: str) -> list[tuple[str, str, str]]:
        """(row label, model, aggregation) of a table, after the first stage's row."""
        section, spec = self.ntnu, self.ntnu["tables"][table]
        models = [(name, m["label"]) for name, m in section["models"].items() if table in m["tables"]]
        if spec["by_aggregation"]:
            return [(f"{label}, {AGGREGATORS[a].label}", name, a) for name, label in models for a in section["aggregations"]]
        return [(label, name, section["aggregation"]) for name, label in models]

    def ntnu_table_runs(self, table: str) -> list[tuple[str, str]]:
        """(row label, run) of a table: the first stage's row, then the models'."""
        first = self.ntnu["first_stage"]
        return [(FIRST_STAGES[first].label, first)] + [(label, self.ntnu_run(m, a)) for label, m, a in self.ntnu_rows(table)]

    def ntnu_table_cells(self, table: str) -> list[tuple[str, str, str]]:
        """(column group, row label, run) of a table's measures. One group, the collection; or, for a table
        with `distilled`, "Train" (the rows' models) and "Distilled" (their distilled counterparts), the
        first stage in both, so that each group has its baseline."""
        distilled = self.ntnu["tables"][table]["distilled"]
        runs = self.ntnu_table_runs(table)
        if not distilled:
            return [(self.ntnu["collection"], label, run) for label, run in runs]
        first = self.ntnu["first_stage"]
        cells = [("Train", label, run) for label, run in runs]
        cells += [("Distilled", runs[0][0], first)]
        cells += [("Distilled", label, self.ntnu_run(distilled[m], a)) for label, m, a in self.ntnu_rows(table) if m in distilled]
        return cells

    def ntnu_specs(self, table: str) -> list[str]:
        """GROUP:ROW:EVAL specs of a table."""
        return [f"{group}:{label}:{self.ntnu_eval(run)}" for group, label, run in self.ntnu_table_cells(table)]

    def ntnu_checkpoint_meta(self, model: str) -> str:
        return self.layout.path("checkpoint_meta", checkpoint=ntnu_checkpoint(model))

    def ntnu_speed(self, system: str) -> str:
        """Queries per minute of a model's pipeline (or of the first stage alone)."""
        return self.layout.path("ntnu_speed", collection=self.ntnu_slug, system=system)

    NTNU_COLUMNS = {  # column -> (label, source, key, format); measures come from the section
        "shape": ("L/H", "checkpoint", "shape", None),
        "final_loss": ("Train loss", "checkpoint", "final_loss", ".4f"),
        "validation_loss": ("Eval loss", "checkpoint", "validation.last_loss", ".4f"),
        "parameters": ("Parameters", "checkpoint", "parameters", ",.0f"),
        "queries_per_minute": ("Queries/min", "speed", "queries_per_minute", ",.0f"),
    }

    def ntnu_value_cells(self, table: str) -> list[tuple[str, str, str, str]]:
        """(row, column label, JSON file, key) of a table's non-measure columns (the first stage: its speed only)."""
        section, cells = self.ntnu, []
        first = section["first_stage"]
        for column in section["tables"][table]["columns"]:
            if column == "measures":
                continue
            label, source, key, _ = self.NTNU_COLUMNS[column]
            if source == "speed":
                cells.append((FIRST_STAGES[first].label, label, self.ntnu_speed(first), key))
            for row, model, _ in self.ntnu_rows(table):
                path = self.ntnu_speed(model) if source == "speed" else self.ntnu_checkpoint_meta(model)
                cells.append((row, label, path, key))
        return cells

    def ntnu_values(self, table: str) -> list[str]:
        """ROW:COLUMN:JSON:KEY specs of `ntnu_value_cells`."""
        return [":".join(cell) for cell in self.ntnu_value_cells(table)]

    def ntnu_value_formats(self, table: str) -> list[str]:
        return [f"{self.NTNU_COLUMNS[c][0]}:{self.NTNU_COLUMNS[c][3]}" for c in self.ntnu["tables"][table]["columns"]
                if c != "measures" and self.NTNU_COLUMNS[c][3]]

    def ntnu_machine_columns(self, table: str) -> list[str]:
        """The table's columns measured on the machine (speeds): stored, not compared with a reference."""
        return [self.NTNU_COLUMNS[c][0] for c in self.ntnu["tables"][table]["columns"]
                if c != "measures" and self.NTNU_COLUMNS[c][1] == "speed"]

    def ntnu_table_inputs(self, table: str) -> list[str]:
        """Every file a table reads: evaluations, checkpoint metas and speed files."""
        files = [self.ntnu_eval(run) for _, _, run in self.ntnu_table_cells(table)]
        files += [path for _, _, path, _ in self.ntnu_value_cells(table)]
        return list(dict.fromkeys(files))

    def ntnu_table_metas(self, table: str) -> list[str]:
        """The checkpoint records of a table's models: their fingerprints go into the numbers' provenance."""
        return [self.ntnu_checkpoint_meta(m) for m in self.ntnu_table_models(table)]

    def ntnu_summary(self, table: str) -> str | None:
        """LABEL:ROW1|ROW2|... of a table's mean ± sd row (over seeds); labels may hold commas."""
        if not self.ntnu["tables"][table]["summary"]:
            return None
        return "Mean ± sd:" + "|".join(label for label, _, _ in self.ntnu_rows(table))

    def ntnu_speed_stages(self, system: str) -> dict[str, str]:
        """The benchmark files of a system's pipeline: the first stage, then passages and a model's scoring."""
        section, collection = self.ntnu, self.ntnu_slug
        stages = {"retrieve": self.layout.path("benchmark", stage="retrieve", name=f"{collection}.{section['first_stage']}")}
        if system != section["first_stage"]:
            stages["segment"] = self.layout.path("benchmark", stage="segment", name=f"{collection}.ntnu-passages")
            stages["score"] = self.layout.path("benchmark", stage="score", name=f"{collection}.{ntnu_checkpoint(system)}"
                                               f".ntnu-passages.k{section['candidates']}")
        return stages

    def ntnu_figure_inputs(self, table: str) -> list[str]:
        if self.ntnu["tables"][table]["figure"] == "ranks":
            return ([self.layout.path("qrels", collection=self.ntnu_slug)]
                    + [self.layout.path("trec_run", collection=self.ntnu_slug, run=run) for _, run in self.ntnu_table_runs(table)])
        return [self.ntnu_checkpoint_meta(m) for m in dict.fromkeys(m for _, m, _ in self.ntnu_rows(table))]

    def ntnu_figure_args(self, table: str) -> str:
        """`tables figure` arguments: the relevant document's rank (runs), or loss curves (checkpoints)."""
        section, kind = self.ntnu, self.ntnu["tables"][table]["figure"]
        if kind == "ranks":
            runs = [f"{label}:{self.layout.path('trec_run', collection=self.ntnu_slug, run=run)}"
                    for label, run in self.ntnu_table_runs(table)]
            grade = self.config["collections"][section["collection"]]["relevant_min_grade"]
            return (" ".join(["ranks"] + [f"--run {shlex.quote(r)}" for r in runs])
                    + f" --qrels {self.layout.path('qrels', collection=self.ntnu_slug)} --depth {section['candidates']}"
                    f" --relevant-min-grade {grade}")
        models = dict.fromkeys((m, self.ntnu["models"][m]["label"]) for _, m, _ in self.ntnu_rows(table))
        checkpoints = [f"{label}:{self.layout.path('checkpoint_dir', checkpoint=ntnu_checkpoint(m))}" for m, label in models]
        return " ".join(["curves"] + [f"--checkpoint {shlex.quote(c)}" for c in checkpoints]
                        + ["--what", "validation" if kind == "validation_curves" else "both"])

    def ntnu_sweep_runs(self) -> list[tuple[int, str, str]]:
        """(R, row label, run) of figure 5.4: the first stage, and the reference model per aggregation."""
        section = self.ntnu
        label = section["models"][section["reference"]]["label"]
        rows = [(r, FIRST_STAGES[section["first_stage"]].label, section["first_stage"]) for r in section["candidate_sweep"]]
        rows += [(r, f"{label}, {AGGREGATORS[a].label}", self.ntnu_run(section["reference"], a, r))
                 for a in section["aggregations"] for r in section["candidate_sweep"]]
        return rows

    def ntnu_sweep_evals(self) -> list[str]:
        return list(dict.fromkeys(self.ntnu_eval(run) for _, _, run in self.ntnu_sweep_runs()))

    def ntnu_sweep_specs(self) -> list[str]:
        return [f"{r}:{label}:{self.ntnu_eval(run)}" for r, label, run in self.ntnu_sweep_runs()]

    def ntnu_caption(self, table: str) -> str:
        section = self.ntnu
        training = training_config(self.config, ntnu_checkpoint(section["reference"]))
        passages = section["passages"]
        first = FIRST_STAGES[section["first_stage"]].label
        return (f"{section['tables'][table]['caption']}. {section['collection']}: {first} top {section['candidates']} "
                f"reranked (the rest kept in order); passages of {passages['length']} words every {passages['stride']}"
                f"{', titled' if passages['title'] else ''}, max length {section['max_length']}; rerankers start from "
                f"{self.lineage(section['base'])} unless the row says, and train on {section['train_collection']} (passages of relevant "
                f"documents positive; {training['negatives_per_positive']} negatives per positive from the top "
                f"{training['negatives_depth']}; lr {training['learning_rate']:g}, batch {training['batch_size']}, "
                f"{training['epochs']:g} epoch{'s' if training['epochs'] != 1 else ''}, at most {training['max_pairs']} pairs, "
                f"{'the last step kept' if training['select'] == 'last' else 'the best step on held-out loss kept'} "
                f"unless a row says otherwise); "
                f"documents scored by {AGGREGATORS[section['aggregation']].label} unless the row says."
                + self.ntnu_training_exceptions(table))

    def ntnu_table_models(self, table: str) -> list[str]:
        """The models of a table's rows, then their distilled counterparts."""
        models = list(dict.fromkeys(m for _, m, _ in self.ntnu_rows(table)))
        distilled = self.ntnu["tables"][table]["distilled"]
        return models + [distilled[m] for m in models if m in distilled]

    def ntnu_training_exceptions(self, table: str) -> str:
        """A caption sentence per group of rows whose steps, rate or step pick differ from the reference's."""
        section = self.ntnu
        reference = training_config(self.config, ntnu_checkpoint(section["reference"]))
        keys = ("learning_rate", "epochs", "max_pairs", "select")
        groups: dict[tuple, list[str]] = {}
        for model in self.ntnu_table_models(table):
            training = training_config(self.config, ntnu_checkpoint(model))
            if any(training[k] != reference[k] for k in keys):
                groups.setdefault(tuple(training[k] for k in keys), []).append(section["models"][model]["label"])
        sentences = []
        for (rate, epochs, pairs, select), labels in groups.items():
            sentences.append(f" {'; '.join(labels)}: lr {rate:g}, {epochs:g} epoch{'s' if epochs != 1 else ''}, at most {pairs} pairs, "
                             f"{'the last step kept' if select == 'last' else 'the best step on held-out loss kept'}.")
        return "".join(sentences)

    # What a stage reads from the resolved file (reranker.settings, which the stage calls too): rules
    # list it as params, so that Snakemake reruns a job when one of its own settings changes.
    def settings(self, stage: str, collection: str | None = None, **keys) -> dict:
        return stage_settings.of(stage, self.config, collection=self.slug_to_id[collection] if collection else None, **keys)

    # Tables ------------------------------------------------------------------------------------
    def birch_rows(self) -> list[tuple[str, str, str | None]]:
        """(row label, run name, checkpoint) of the main table, in order."""
        rows: list[tuple[str, str, str | None]] = [(FIRST_STAGES[self.first_stage].label, self.first_stage, None)]
        for name in self.birch["checkpoints"]:
            rows += [(f"{self.label(name)} {n}S", f"birch.{name}.{n}S", name) for n in self.birch["fusion"]["top_n"]]
        passage = self.birch["passage_checkpoint"]
        if passage:
            for unit in self.units:
                rows += [(f"{AGGREGATORS[m].label} over {unit}, {self.label(passage)}", f"{m}.{passage}.{unit}", passage)
                         for m in self.birch["aggregation"]]
        if "maxp" in self.birch["aggregation"]:  # every other checkpoint's sentence evidence on its own, too
            rows += [(f"{AGGREGATORS['maxp'].label} over sentences, {self.label(name)}", f"maxp.{name}.sentences", name)
                     for name in self.birch["checkpoints"] if name != passage]
        return rows

    def birch_cells(self) -> list[tuple[str, str, str]]:
        """(collection slug, row label, run name) of every cell that exists: no checkpoint on its own training data."""
        return [(s, label, run) for s in self.target_slugs for label, run, name in self.birch_rows()
                if name is None or self.applies_to(name, self.slug_to_id[s])]

    @property
    def table_finetuned(self) -> list[str]:
        """Fine-tuned checkpoints behind any row of the main table (each gets a note and a loss curve)."""
        names = self.birch["checkpoints"] + ([self.birch["passage_checkpoint"]] if self.birch["passage_checkpoint"] else [])
        return self.finetuned(dict.fromkeys(names))

    def score_metas(self) -> list[str]:
        return [self.layout.path("scores_meta", collection=s, checkpoint=c, first_stage=self.first_stage, k=self.k,
                                 unit="sentences")
                for s in self.target_slugs for c in self.birch["checkpoints"] if self.applies_to(c, self.slug_to_id[s])]

    def birch_specs(self) -> str:
        return " ".join(shlex.quote(f"{self.slug_to_id[s]}:{label}:{self.layout.path('eval', collection=s, run=run)}")
                        for s, label, run in self.birch_cells())

    def checkpoint_specs(self) -> str:
        """LABEL:reranker.json of each fine-tuned checkpoint behind the main table (its note)."""
        return " ".join(shlex.quote(f"{self.label(c)}:{self.layout.path('checkpoint_meta', checkpoint=c)}")
                        for c in self.table_finetuned)

    def training_text(self, name: str) -> str:
        """A checkpoint's training in words: each stage's collections, mixed (+) or in turn (→), and its own settings."""
        entry = self.checkpoint(name)
        if entry["source"] != "finetune":
            return ""
        before = self.training_text(entry["base"])
        sources = (" + " if entry.get("mix") else " → ").join(entry["train_on"])
        own = entry.get("training", {})
        settings = ", ".join(f"{key.replace('_', ' ')} {value:g}" if isinstance(value, float) else f"{key.replace('_', ' ')} {value}"
                             for key, value in own.items() if key in ("learning_rate", "max_pairs", "epochs"))
        return (f"{before} → " if before else "") + sources + (f" ({settings})" if settings else "")

    def birch_caption(self) -> str:
        fine_tuned = self.finetuned(self.birch["checkpoints"])
        models = "; ".join(f"{self.label(c)} = {self.hub_model(c)} fine-tuned on {self.training_text(c)}" for c in fine_tuned)
        titled = sorted({cid for c in fine_tuned for cid in self.training_chain(c)
                         if self.collection(slug(cid)).get("source") == "titles"})
        parents = ", ".join(self.collection(slug(cid))["of"] for cid in titled)
        titles_text = (f" {', '.join(titled)}: each document's title as a query of its own body, with BM25 negatives from the "
                       f"same collection: the documents of {parents}, never their queries or judgments." if titled else "")
        references = [c for c in self.birch["checkpoints"] if self.checkpoint(c).get("head") == "bi_encoder"]
        training = self.config["training"]
        reference_text = (f" Reference rows, not Birch's classifier: {', '.join(self.label(c) for c in references)}, "
                          f"the cosine of the mean-pooled query and sentence vectors as S_i in the same fusion."
                          if references else "")
        return (f"Birch on open collections, cross-domain (no checkpoint is trained on the queries or judgments of a "
                f"collection it is evaluated on). "
                f"{FIRST_STAGES[self.first_stage].label} top {self.k} documents reranked, the rest kept in order; "
                f"sentences by pysbd, max length {self.config['segment']['max_length']} tokens; {models}"
                f" (a classification head on the pooling the base was trained with; lr {training['learning_rate']}, "
                f"{training['negatives_per_positive']} BM25 negatives per positive, {training['epochs']} epochs, "
                f"max length {training['max_length']}, the step with the lowest held-out loss on "
                f"{training['validation_fraction']:.0%} of the training queries; a checkpoint's own settings in brackets)."
                f"{titles_text} a, w2, w3 chosen by "
                f"{self.birch['folds']['k']}-fold CV on AP (folds in {self.config['reference']}/folds/).{reference_text}")

    def baseline_specs(self) -> str:
        base = [f"{FIRST_STAGES[m].label}:{self.slug_to_id[s]}:{self.layout.path('eval', collection=s, run=m)}"
                for s in self.baseline_slugs for m in FIRST_STAGES]
        provided = [f"{FIRST_STAGES['bm25_rm3'].label}:{self.slug_to_id[s]} (provided run):"
                    f"{self.layout.path('eval', collection=s, run='provided')}" for s in self.provided_slugs]
        return " ".join(shlex.quote(spec) for spec in base + provided)

    def baselines_caption(self) -> str:
        models = self.config["retrieval"]["models"]
        rm3 = models["bm25_rm3"]
        return (f"Lucene baselines (pyserini), depth {self.config['retrieval']['depth']}: "
                f"BM25 (k1={models['bm25']['k1']}, b={models['bm25']['b']}) "
                f"and BM25+RM3 (fb_terms={rm3['fb_terms']}, fb_docs={rm3['fb_docs']}, "
                f"original_query_weight={rm3['original_query_weight']})"
                + self.overrides_text())

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

