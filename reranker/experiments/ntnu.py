"""Steensland (2021), the NTNU MSc thesis: passage aggregation, Tables 5.1-5.6 and figures 5.1-5.4.

Titled passages of the first stage's top R scored by BERT and aggregated per document (Max, Mean),
with fine-tuning choices, model size and distillation as rows. Its configuration: `ntnu:`; its
rules: workflow/rules/ntnu.smk.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from reranker.core.config import NamedRows, merge, training_config
from reranker.core.registry import AGGREGATORS, FIRST_STAGES
from reranker.experiments.base import FigureJob, Plugin, StageJob, TableJob, section_problems, significance
from reranker.experiments.curves import LossCurves
from reranker.formats.learning import grouped_label

# The prefix of every checkpoint it generates (one per model): its names, and its resources row.
CHECKPOINT_PREFIX = "ntnu-"


def ntnu_checkpoint(model: str) -> str:
    return f"{CHECKPOINT_PREFIX}{model}"


def cross_check(config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
    """What the schema cannot say of `ntnu:`: its collections, models, tables, distilled cells and presets
    exist and name each other, and no model trains for nothing."""
    ntnu = config["ntnu"]
    problems, used = section_problems(config, "ntnu", ("collection", "train_collection"))
    if ntnu["reference"] not in ntnu["models"]:
        problems.append(f"  ntnu/reference: {ntnu['reference']!r} is not among ntnu/models ({', '.join(ntnu['models'])})")
    problems += [f"  ntnu/models/{name}/tables: unknown table {table!r} (ntnu/tables: {', '.join(ntnu['tables'])})"
                 for name, spec in ntnu["models"].items() for table in spec["tables"] if table not in ntnu["tables"]]
    for table, spec in ntnu["tables"].items():
        rows = [name for name, model in ntnu["models"].items() if table in model["tables"]]
        problems += [f"  ntnu/tables/{table}/distilled: {row!r} is not a row of {table} ({', '.join(rows)})"
                     for row in spec["distilled"] if row not in rows]
        problems += [f"  ntnu/tables/{table}/distilled/{row}: unknown model {model!r} (ntnu/models: "
                     f"{', '.join(ntnu['models'])})" for row, model in spec["distilled"].items()
                     if model not in ntnu["models"]]
    problems += [f"  ntnu/models/{name}/preset: unknown preset {spec['preset']!r} (ntnu/training_presets: "
                 f"{', '.join(ntnu['training_presets']) or 'none'})"
                 for name, spec in ntnu["models"].items() if spec.get("preset") and spec["preset"] not in ntnu["training_presets"]]
    # A model trained on passages trains on the passages it scores: one window, ntnu/passages, that its training
    # repeats (the keys differ: training.passage_* are every unit-passages training's, ntnu/passages the scoring's).
    window = ntnu["passages"]
    for name in ntnu["models"]:
        training = training_config(config, ntnu_checkpoint(name))
        trained = {key: training[f"passage_{key}"] for key in ("length", "stride", "title")}
        if training["unit"] == "passages" and trained != window:
            problems.append(f"  ntnu/models/{name}: trains on passages {trained} but ntnu/passages scores {window}: "
                            "set ntnu/training's passage_length, passage_stride and passage_title to ntnu/passages")
    teachers = {(spec.get("training") or {}).get("teacher") for spec in ntnu["models"].values()}
    cells = {m for spec in ntnu["tables"].values() for m in spec["distilled"].values()}
    problems += [f"  ntnu/models/{name}: in no table, no table's distilled and no teacher: it would train for nothing"
                 for name, spec in ntnu["models"].items()
                 if not spec["tables"] and name not in cells and ntnu_checkpoint(name) not in teachers]
    return problems, used


def generated_checkpoints(config: Mapping) -> dict:
    """The checkpoints the NTNU section implies: one per model, trained on the training collection."""
    section = config["ntnu"]
    return {ntnu_checkpoint(name): {
        "source": "finetune", "label": spec["label"], "base": spec.get("base") or section["base"],
        "train_on": [section["train_collection"]], "mix": False, "threads": section["threads"],
        "training": merge(merge(section.get("training", {}), section.get("training_presets", {}).get(spec.get("preset"), {})),
                          spec.get("training", {}))}
        for name, spec in section.get("models", {}).items()}


def drop_null_cells(section: dict) -> None:
    """A table's `distilled` cells an overlay names null are dropped, as its rows are."""
    for spec in (section.get("tables") or {}).values():
        if isinstance(spec, dict) and isinstance(spec.get("distilled"), dict):
            spec["distilled"] = {row: model for row, model in spec["distilled"].items() if model is not None}


class NTNU(LossCurves, Plugin, name="ntnu", wall_clock_part="ntnu", checkpoint_prefix=CHECKPOINT_PREFIX):
    paths = {
        "ntnu_segments": "work/segments/{collection}/{first_stage}.k{k}.ntnu-passages.jsonl",
        "ntnu_scores": "work/scores/{collection}/{checkpoint}/{first_stage}.k{k}.ntnu-passages.tsv",
        "ntnu_speed": "work/speed/{collection}/{system}.json",
    }
    checkpoints = staticmethod(generated_checkpoints)
    cross_check = staticmethod(cross_check)
    named_rows = NamedRows(keys=("models", "tables"), droppable=("models",), drop_nulls=drop_null_cells)

    def figures(self) -> list[str]:
        section = self.section
        figures = [self.layout.path("figure", figure=t) for t, spec in section["tables"].items() if spec["figure"] != "none"]
        return figures + ([self.layout.path("figure", figure="ntnu_candidates")] if section["sweep_figure"] else [])

    def outputs(self) -> list[str]:
        return ([self.layout.path("table", table=t) for t in self.section["tables"]] + self.figures()
                + [self.layout.path("figure", figure=f) for f in self.curves()])

    def curves(self) -> dict[str, list[tuple[str, str]]]:
        """A figure per model whose curve no table's figure draws (table 5.3's and 5.4's draw theirs)."""
        section = self.section
        drawn = {m for t, spec in section["tables"].items() if spec["figure"] not in ("none", "ranks") for _, m, _ in self.rows(t)}
        return {f"ntnu_{name}_loss": [(spec["label"], ntnu_checkpoint(name))] for name, spec in section["models"].items()
                if name not in drawn}

    @property
    def depth(self) -> int:
        """Candidates segmented: the largest R of the tables and of the sweep."""
        return max([self.section["candidates"]] + (self.section["candidate_sweep"] if self.section["sweep_figure"] else []))

    def stage_jobs(self) -> list[StageJob]:
        """Titled, overlapping word passages of the first stage's top candidates (down to the sweep's deepest R),
        and a model's scores of those of the top k, uncached: its benchmark times the model."""
        pattern, first = self.layout.pattern, self.section["first_stage"]
        segments = pattern("ntnu_segments", first_stage=first, k=self.depth)
        inputs = {"run": pattern("trec_run", run=first), "topics": pattern("topics")}
        return [
            StageJob("segment_ntnu", "segment", {"docs": pattern("docs"), **inputs}, {"segments": segments},
                     "{collection}.ntnu-passages",
                     "segment --config {params.config} --section ntnu --candidates {params.candidates} --docs {input.docs}"
                     " --run {input.run} --topics {input.topics} --unit passages --out {output}",
                     {"settings": self.exp.settings("segment", section="ntnu", candidates=self.depth), "candidates": self.depth}),
            self.score_job("score_ntnu", {"segments": segments, **inputs, "qrels": pattern("qrels")},
                           {"scores": pattern("ntnu_scores", first_stage=first)}, "{collection}.{checkpoint}.ntnu-passages.k{k}",
                           "score --config {params.config} --section ntnu --checkpoint {wildcards.checkpoint}"
                           " --model {params.model:q} --candidates {wildcards.k} --no-cache --segments {input.segments}"
                           " --run {input.run} --topics {input.topics} --qrels {input.qrels} --threads {threads}"
                           " --out {output.scores}"),
        ]

    def run(self, model: str, aggregation: str, candidates: int | None = None) -> str:
        """A reranked run: at the tables' R, or (the sweep) at R out of the deepest scoring."""
        return f"ntnu.{model}.{aggregation}" + (f".r{candidates}" if candidates is not None else "")

    def eval(self, run: str) -> str:
        return self.layout.path("eval", collection=self.slug, run=run)

    def rows(self, table: str) -> list[tuple[str, str, str]]:
        """(row label, model, aggregation) of a table, after the first stage's row."""
        section, spec = self.section, self.section["tables"][table]
        models = [(name, m["label"]) for name, m in section["models"].items() if table in m["tables"]]
        if spec["by_aggregation"]:
            return [(f"{label}, {AGGREGATORS[a].label}", name, a) for name, label in models for a in section["aggregations"]]
        return [(label, name, section["aggregation"]) for name, label in models]

    def table_runs(self, table: str) -> list[tuple[str, str]]:
        """(row label, run) of a table: the first stage's row, then the models'."""
        first = self.section["first_stage"]
        return [(FIRST_STAGES[first].label, first)] + [(label, self.run(m, a)) for label, m, a in self.rows(table)]

    def table_cells(self, table: str) -> list[tuple[str, str, str]]:
        """(column group, row label, run) of a table's measures. One group, the collection; or, for a table
        with `distilled`, "Train" (the rows' models) and "Distilled" (their distilled counterparts), the
        first stage in both, so that each group has its baseline."""
        distilled = self.section["tables"][table]["distilled"]
        runs = self.table_runs(table)
        if not distilled:
            return [(self.section["collection"], label, run) for label, run in runs]
        first = self.section["first_stage"]
        cells = [("Train", label, run) for label, run in runs]
        cells += [("Distilled", runs[0][0], first)]
        cells += [("Distilled", label, self.run(distilled[m], a)) for label, m, a in self.rows(table) if m in distilled]
        return cells

    def spec(self, table: str) -> dict[str, list[dict]]:
        """A table's cells (reranker.formats.table_spec): its evaluations, its value columns and their formats,
        its mean ± sd row, and each row's checkpoint record (its held-out losses go into the numbers' provenance, so
        that a claim on a row that did not learn reads "not trained"; a Distilled student's record is labelled
        `grouped_label(row, "Distilled")`, apart from its Train twin's)."""
        distilled, rows = self.section["tables"][table]["distilled"], self.rows(table)
        aggregated = {self.run(name, a): a for _, m, a in rows for name in (m, distilled.get(m)) if name}
        return {"eval": [{"group": group, "row": label, "path": self.eval(run)}
                         | ({"aggregation": aggregated[run]} if run in aggregated else {})
                         for group, label, run in self.table_cells(table)],
                "value": [{"row": row, "column": column, "path": path, "key": key}
                          for row, column, path, key in self.value_cells(table)],
                "value_format": self.value_formats(table), "summary_row": self.summary(table),
                "checkpoints": [{"label": label, "path": self.checkpoint_meta(model)} for label, model, _ in rows]
                + [{"label": grouped_label(label, "Distilled"), "path": self.checkpoint_meta(distilled[model])}
                   for label, model, _ in rows if model in distilled]}

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        """Every table's cells, and the candidates figure's points (`ntnu_candidates`) where it is drawn."""
        specs = {table: self.spec(table) for table in self.section["tables"]}
        if self.section["sweep_figure"]:
            specs["ntnu_candidates"] = self.sweep_spec()
        return specs

    def checkpoint_meta(self, model: str) -> str:
        return self.layout.path("checkpoint_meta", checkpoint=ntnu_checkpoint(model))

    def speed(self, system: str) -> str:
        """Queries per minute of a model's pipeline (or of the first stage alone)."""
        return self.layout.path("ntnu_speed", collection=self.slug, system=system)

    COLUMNS = {  # column -> (label, source, key, format); measures come from the section
        "shape": ("L/H", "checkpoint", "shape", None),
        "final_loss": ("Train loss", "checkpoint", "final_loss", ".4f"),
        "validation_loss": ("Eval loss", "checkpoint", "validation.last_loss", ".4f"),
        "parameters": ("Parameters", "checkpoint", "parameters", ",.0f"),
        "queries_per_minute": ("Queries/min", "speed", "queries_per_minute", ",.0f"),
    }

    def value_cells(self, table: str) -> list[tuple[str, str, str, str]]:
        """(row, column label, JSON file, key) of a table's non-measure columns (the first stage: its speed only)."""
        section, cells = self.section, []
        first = section["first_stage"]
        for column in section["tables"][table]["columns"]:
            if column == "measures":
                continue
            label, source, key, _ = self.COLUMNS[column]
            if source == "speed":
                cells.append((FIRST_STAGES[first].label, label, self.speed(first), key))
            for row, model, _ in self.rows(table):
                path = self.speed(model) if source == "speed" else self.checkpoint_meta(model)
                cells.append((row, label, path, key))
        return cells

    def value_formats(self, table: str) -> list[dict]:
        """(column, format) records of the value columns with a format of their own."""
        return [{"column": self.COLUMNS[c][0], "format": self.COLUMNS[c][3]} for c in self.section["tables"][table]["columns"]
                if c != "measures" and self.COLUMNS[c][3]]

    def machine_columns(self, table: str) -> list[str]:
        """The table's columns measured on the machine (speeds): stored, not compared with a reference."""
        return [self.COLUMNS[c][0] for c in self.section["tables"][table]["columns"]
                if c != "measures" and self.COLUMNS[c][1] == "speed"]

    def table_inputs(self, table: str) -> list[str]:
        """Every file a table reads (its spec's): evaluations, checkpoint metas and speed files."""
        return self.exp.spec_files(table)

    def table_metas(self, table: str) -> list[str]:
        """The checkpoint records of a table's models: their fingerprints go into the numbers' provenance."""
        return [self.checkpoint_meta(m) for m in self.table_models(table)]

    def summary(self, table: str) -> list[dict]:
        """A table's mean ± sd row over every row (seeds), as a record; none where the table has no summary."""
        if not self.section["tables"][table]["summary"]:
            return []
        return [{"label": "Mean ± sd", "rows": [label for label, _, _ in self.rows(table)]}]

    def speed_stages(self, system: str) -> dict[str, str]:
        """The benchmark files of a system's pipeline: the first stage, then passages and a model's scoring."""
        section, collection = self.section, self.slug
        stages = {"retrieve": self.layout.path("benchmark", stage="retrieve", name=f"{collection}.{section['first_stage']}")}
        if system != section["first_stage"]:
            stages["segment"] = self.layout.path("benchmark", stage="segment", name=f"{collection}.ntnu-passages")
            stages["score"] = self.layout.path("benchmark", stage="score", name=f"{collection}.{ntnu_checkpoint(system)}"
                                               f".ntnu-passages.k{section['candidates']}")
        return stages

    def table_jobs(self) -> dict[str, TableJob]:
        """Every table: its rows against the first stage, with the suite's significance marks; its machine-measured
        columns stored, not compared."""
        command = ("results --spec {input.spec} --baseline-row {params.baseline:q} {params.significance}"
                   " --measures {params.measures} --row-header Reranker {params.machine} --meta {input.metas}"
                   " --caption {params.caption:q} --out {params.out} --formats md csv tex html --numbers {output.numbers}"
                   " --sources {input.sources} --command {params.command:q}")
        return {table: TableJob(
            f"ntnu_table_{table}", {"files": self.table_inputs(table), "metas": self.table_metas(table)}, command,
            {"machine": " ".join(f"--machine-column {shlex.quote(c)}" for c in self.machine_columns(table)),
             "significance": significance(self.config), "baseline": FIRST_STAGES[self.section["first_stage"]].label,
             "measures": " ".join(self.section["measures"]), "caption": self.caption(table),
             "command": self.config["run_command"] + " ntnu"})
            for table in self.section["tables"]}

    def figure_jobs(self) -> dict[str, FigureJob]:
        """Its tables' figures (relevant ranks or loss curves), then its other models' loss curves."""
        run_command = self.config["run_command"] + " ntnu"
        return {table: FigureJob(f"ntnu_figure_{table}", self.figure_inputs(table), self.figure_args(table),
                                 self.caption(table), {"command": run_command})
                for table, spec in self.section["tables"].items() if spec["figure"] != "none"} | super().figure_jobs()

    def figure_inputs(self, table: str) -> list[str]:
        if self.section["tables"][table]["figure"] == "ranks":
            return ([self.layout.path("qrels", collection=self.slug)]
                    + [self.layout.path("trec_run", collection=self.slug, run=run) for _, run in self.table_runs(table)])
        return [self.checkpoint_meta(m) for m in dict.fromkeys(m for _, m, _ in self.rows(table))]

    def figure_args(self, table: str) -> str:
        """`tables figure` arguments: the relevant document's rank (runs), or loss curves (checkpoints)."""
        section, kind = self.section, self.section["tables"][table]["figure"]
        if kind == "ranks":
            runs = [f"{label}:{self.layout.path('trec_run', collection=self.slug, run=run)}"
                    for label, run in self.table_runs(table)]
            grade = self.config["collections"][section["collection"]]["relevant_min_grade"]
            return (" ".join(["ranks"] + [f"--run {shlex.quote(r)}" for r in runs])
                    + f" --qrels {self.layout.path('qrels', collection=self.slug)} --depth {section['candidates']}"
                    f" --relevant-min-grade {grade}")
        models = dict.fromkeys((m, self.section["models"][m]["label"]) for _, m, _ in self.rows(table))
        checkpoints = [f"{label}:{self.layout.path('checkpoint_dir', checkpoint=ntnu_checkpoint(m))}" for m, label in models]
        return " ".join(["curves"] + [f"--checkpoint {shlex.quote(c)}" for c in checkpoints]
                        + ["--what", "validation" if kind == "validation_curves" else "both"])

    def sweep_runs(self) -> list[tuple[int, str, str]]:
        """(R, row label, run) of figure 5.4: the first stage, and the reference model per aggregation."""
        section = self.section
        label = section["models"][section["reference"]]["label"]
        rows = [(r, FIRST_STAGES[section["first_stage"]].label, section["first_stage"]) for r in section["candidate_sweep"]]
        rows += [(r, f"{label}, {AGGREGATORS[a].label}", self.run(section["reference"], a, r))
                 for a in section["aggregations"] for r in section["candidate_sweep"]]
        return rows

    def sweep_spec(self) -> dict[str, list[dict]]:
        """Figure 5.4's points (reranker.formats.table_spec `sweep` records)."""
        return {"sweep": [{"x": r, "label": label, "path": self.eval(run)} for r, label, run in self.sweep_runs()]}

    def caption(self, table: str) -> str:
        section = self.section
        training = training_config(self.config, ntnu_checkpoint(section["reference"]))
        passages = section["passages"]
        first = FIRST_STAGES[section["first_stage"]].label
        return (f"{section['tables'][table]['caption']}. {section['collection']}: {first} top {section['candidates']} "
                f"reranked (the rest kept in order); passages of {passages['length']} words every {passages['stride']}"
                f"{', titled' if passages['title'] else ''}, max length {section['max_length']}; rerankers start from "
                f"{self.exp.lineage(section['base'])} unless the row says, and train on {section['train_collection']} "
                f"({self.positives(training)}; {training['negatives_per_positive']} negatives per positive from the top "
                f"{training['negatives_depth']}; lr {training['learning_rate']:g}, batch {training['batch_size']}, "
                f"{training['epochs']:g} epoch{'s' if training['epochs'] != 1 else ''}, {pair_cap(training['max_pairs'])}, "
                f"{'the last step kept' if training['select'] == 'last' else 'the best step on held-out loss kept'} "
                f"unless a row says otherwise); "
                f"documents scored by {AGGREGATORS[section['aggregation']].label} unless the row says."
                + self.training_exceptions(table))

    def positives(self, training: Mapping) -> str:
        """Which passages of a relevant document a model trains on as positives (training.positives)."""
        if training["positives"] == "all":
            return "passages of relevant documents positive"
        name = training["positive_filter"]
        return (f"of a relevant document only the passage that {self.exp.checkpoint(name).get('label', name)} "
                f"({self.exp.lineage(name)}) scores highest positive, its others left out")

    def table_models(self, table: str) -> list[str]:
        """The models of a table's rows, then their distilled counterparts."""
        models = list(dict.fromkeys(m for _, m, _ in self.rows(table)))
        distilled = self.section["tables"][table]["distilled"]
        return models + [distilled[m] for m in models if m in distilled]

    def training_exceptions(self, table: str) -> str:
        """A caption sentence per group of rows whose steps, rate or step pick differ from the reference's."""
        section = self.section
        reference = training_config(self.config, ntnu_checkpoint(section["reference"]))
        keys = ("learning_rate", "epochs", "max_pairs", "select", "positives", "positive_filter")
        groups: dict[tuple, tuple[Mapping, list[str]]] = {}  # the settings that differ -> one model's, the labels
        for model in self.table_models(table):
            training = training_config(self.config, ntnu_checkpoint(model))
            if any(training[k] != reference[k] for k in keys):
                groups.setdefault(tuple(training[k] for k in keys), (training, []))[1].append(section["models"][model]["label"])
        sentences = []
        for t, labels in groups.values():
            epochs = t["epochs"]
            kept = "the last step kept" if t["select"] == "last" else "the best step on held-out loss kept"
            positives = "" if self.positives(t) == self.positives(reference) else f", {self.positives(t)}"
            sentences.append(f" {'; '.join(labels)}: lr {t['learning_rate']:g}, {epochs:g} epoch{'s' if epochs != 1 else ''}, "
                             f"{pair_cap(t['max_pairs'])}, {kept}{positives}.")
        return "".join(sentences)


def pair_cap(max_pairs: int | None) -> str:
    return "every pair" if max_pairs is None else f"at most {max_pairs} pairs"


PLUGIN = NTNU
