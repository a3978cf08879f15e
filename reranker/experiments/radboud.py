"""Verbrugge (2021), the Radboud MSc thesis: BM25 -> BERT on Cranfield, Tables 2.1-3.5.

The first stage's top candidates reranked by classifiers trained per fold, training strategies as rows
(enrich, MLM/NSP pre-training, label heads, regression), at each point of a learning-rate x epochs
grid. Its configuration: `radboud:`; its rules: workflow/rules/radboud.smk.
"""

from __future__ import annotations

from collections.abc import Mapping

from reranker.core.config import NamedRows, merge, training_config
from reranker.core.registry import FIRST_STAGES
from reranker.experiments.base import PRECISION_WORDS, Plugin, StageJob, TableJob, section_problems, significance
from reranker.experiments.curves import LossCurves
from reranker.formats.layout import PATTERNS

# How a configured precision reads in a caption: the setting, not the machine, so that a caption
# reads the same wherever the table is rebuilt.
# How every row's head starts under radboud: carry_head, in a caption's words (without it, as results/radboud.md says).
AGREEMENT = "τ with the baseline"  # the column of each ranking table: Kendall's tau with the baseline reranker's run
CARRIED_HEAD_WORDS = ("every row's head starts from the base's trained two-way head (copied, or for another head an "
                      "affine map of its log-odds fitted on training pairs), but a row named 'fresh head' and MLM transfer's "
                      "(a new head on the moved encoder); "
                      f"'{AGREEMENT}': Kendall's tau between the row's and the baseline reranker's rankings of each "
                      "query's reranked candidates, its mean over the queries; ")
# The prefix of every checkpoint it generates (per fold, per pre-training): its names, and its resources row.
CHECKPOINT_PREFIX = "radboud-"
# The numbers file of the gap to the thesis split into first stage and reranker (`tables split`; results/radboud.md).
SPLIT = "radboud_split"


def radboud_checkpoint(variant: str, point: int, fold: str) -> str:
    """The name of a Radboud reranker: variant, grid point (1-based) and fold."""
    return f"{CHECKPOINT_PREFIX}{variant}-g{point}-f{fold}"


def pretrained_checkpoint(name: str) -> str:
    return f"{CHECKPOINT_PREFIX}pretrain-{name}"


def cross_check(config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
    """What the schema cannot say of `radboud:`: its collection, base, pre-trainings and tables exist."""
    radboud = config["radboud"]
    problems, used = section_problems(config, "radboud")
    problems += [f"  radboud/variants/{name}/pretrained: unknown pre-training {spec['pretrained']!r}"
                 for name, spec in radboud["variants"].items()
                 if spec.get("pretrained") and spec["pretrained"] not in radboud["pretraining"]]
    problems += [f"  radboud/variants/{name}/tables: unknown table {table!r} (radboud/tables: "
                 f"{', '.join(radboud['tables'])})"
                 for name, spec in radboud["variants"].items() for table in spec["tables"]
                 if table not in radboud["tables"]]
    runs = config["collections"].get(radboud["collection"], {}).get("runs") or {}
    problems += [f"  radboud/provided_candidates/{name}: {radboud['collection']} has no run {name!r} (its `runs` in "
                 f"collections.yaml: {', '.join(runs) or 'none'})" for name in radboud["provided_candidates"] if name not in runs]
    baseline = next(iter(radboud["variants"].values()), {"tables": []})  # the reranker the provided runs get
    problems += [f"  radboud/provided_candidates/{name}/tables: {table!r} has no baseline row to compare with "
                 f"(the first variant's tables: {', '.join(baseline['tables']) or 'none'})"
                 for name, spec in radboud["provided_candidates"].items() for table in spec["tables"]
                 if table not in baseline["tables"]]
    return problems, used


def generated_checkpoints(config: Mapping) -> dict:
    """The checkpoints the Radboud section implies: each pre-training, and each variant x grid point x fold."""
    section = config["radboud"]
    collection = section["collection"]
    entries = {}
    for name, spec in section.get("pretraining", {}).items():
        entries[pretrained_checkpoint(name)] = {
            "source": "finetune", "label": spec.get("label", name), "base": section["base"], "train_on": [collection],
            "mix": False, "threads": section["threads"], "training": merge(section.get("training", {}), spec["training"])}
    # carry_head: every variant starts from the base's two-way head, as the baseline does (pre-trainings
    # train no relevance head, so they have none to carry). It is a default under the section's training:
    # a head_from the configuration names, for the section or for a variant, wins.
    carried = {"head_from": section["base"]} if section.get("carry_head") else {}
    for name, spec in section.get("variants", {}).items():
        base = pretrained_checkpoint(spec["pretrained"]) if spec.get("pretrained") else section["base"]
        for point, values in enumerate(section["grid"], start=1):
            for fold in section["folds"]:
                training = merge(merge(merge(carried, section.get("training", {})), values), spec.get("training", {}))
                entries[radboud_checkpoint(name, point, fold)] = {
                    "source": "finetune", "label": spec["label"], "base": base, "train_on": [collection], "mix": False,
                    "train_fold": fold, "threads": section["threads"], "training": training}
    return entries


def ranking_label(ranking: str) -> str:
    """A ranking's words in a row label: "by argmax", "by level 4's score"."""
    if ranking.startswith("label"):
        return f"by level {ranking.removeprefix('label')}'s score"
    return "by argmax" if ranking == "argmax" else "by the relevant logit"


class Radboud(LossCurves, Plugin, name="radboud", wall_clock_part="radboud|segment_documents", checkpoint_prefix=CHECKPOINT_PREFIX):
    paths = {
        "radboud_scores": "work/scores/{collection}/{checkpoint}/{first_stage}.k{k}.documents.{ranking}.tsv",
        "radboud_joined": "work/scores/{collection}/radboud/{variant}.g{point}.{ranking}.tsv",
        "radboud_joined_on": "work/scores/{collection}/radboud/{variant}.g{point}.{ranking}.on-{provided}.tsv",  # a provided run's
        "radboud_agreement": "work/eval/{collection}/radboud.{variant}.g{point}.{ranking}.agreement.json",
    }
    checkpoints = staticmethod(generated_checkpoints)
    cross_check = staticmethod(cross_check)
    named_rows = NamedRows(keys=("pretraining", "variants"), droppable=("pretraining", "variants", "provided_candidates"))

    def tables(self) -> list[str]:
        return self.ranking_tables() + self.pretraining_tables()

    def outputs(self) -> list[str]:
        split = [self.split_numbers()] if self.split_table() else []
        return ([self.layout.path("table", table=t) for t in self.tables()] + [self.layout.path("figure", figure=f) for f in self.curves()]
                + split)

    def curves(self) -> dict[str, list[tuple[str, str]]]:
        """A figure per variant (its checkpoints of every fold and grid point) and per pre-training."""
        several = len(self.points) > 1
        figures = {f"radboud_{name}_loss": [(f"{self.point_label(p)}, fold {f}" if several else f"fold {f}", radboud_checkpoint(name, p, f))
                                            for p in self.points for f in self.section["folds"]]
                   for name in self.section["variants"]}
        figures |= {f"radboud_pretrain_{name}_loss": [(spec.get("label", name), pretrained_checkpoint(name))]
                    for name, spec in self.section["pretraining"].items()}
        return figures

    def ranking_tables(self) -> list[str]:
        return [t for t in self.section["tables"] if any(t in v["tables"] for v in self.section["variants"].values())]

    def pretraining_tables(self) -> list[str]:
        return [t for t in self.section["tables"] if any(t in p["tables"] for p in self.section["pretraining"].values())]

    def stage_jobs(self) -> list[StageJob]:
        """The first stage's top candidates as whole documents (title + text), one unit each; a per-fold
        checkpoint's scores of its fold's test queries' candidates, read by one ranking."""
        pattern, first = self.layout.pattern, self.section["first_stage"]
        return [
            StageJob("segment_documents", "segment",
                     {"docs": pattern("docs"), "run": pattern("trec_run", run=first), "topics": pattern("topics")},
                     {"segments": pattern("segments", first_stage=first, k=self.section["candidates"], unit="documents")},
                     "{collection}.documents",
                     "segment --config {params.config} --section radboud --docs {input.docs} --run {input.run}"
                     " --topics {input.topics} --unit documents --out {output}",
                     {"settings": self.exp.settings("segment", section="radboud")}),
            self.score_job("score_radboud",
                           {"segments": pattern("segments", unit="documents"), "run": pattern("trec_run", run="{first_stage}"),
                            "topics": pattern("topics"), "folds": pattern("work_folds")},
                           {"scores": pattern("radboud_scores")}, "{collection}.{checkpoint}.{first_stage}.k{k}.{ranking}",
                           "score --config {params.config} --section radboud --checkpoint {wildcards.checkpoint}"
                           " --model {params.model:q} --cache {params.cache:q} --ranking {wildcards.ranking}"
                           " --folds {input.folds} --segments {input.segments} --run {input.run} --topics {input.topics}"
                           " --threads {threads} --out {output.scores}",
                           cache=self.layout.path("score_cache")),
        ]

    def table_jobs(self) -> dict[str, TableJob]:
        """The ranking tables (rows against the first stage and, where it has one, the table's own baseline row,
        with the suite's significance marks), then the pretraining tables (what each pretraining learned)."""
        command = self.config["run_command"] + " radboud"
        ranking = ("results --spec {input.spec} --baseline-row {params.baseline:q} {params.significance}"
                   " --second-baseline-row {params.second:q} --measures {params.measures} --row-header Reranker"
                   " --caption {params.caption:q} --formats md csv tex html --sources {input.sources}"
                   " --out {params.out} --numbers {output.numbers} --command {params.command:q}")
        pretraining = ("pretraining --spec {input.spec} --caption {params.caption:q} --formats md csv tex html"
                       " --out {params.out} --numbers {output.numbers} --command {params.command:q} --sources {input.sources}")
        jobs = {table: TableJob(
            f"radboud_table_{table}",
            {kind: self.exp.spec_files(table, kind) for kind in ("eval", "checkpoints", "value")}, ranking,
            {"significance": significance(self.config), "baseline": FIRST_STAGES[self.section["first_stage"]].label,
             "second": self.baseline_row(table) or "", "measures": " ".join(self.section["measures"]),
             "caption": self.caption(table), "command": command})
            for table in self.ranking_tables()}
        return jobs | {table: TableJob(f"radboud_table_{table}", {"metas": self.exp.spec_files(table, "checkpoints")},
                                       pretraining, {"caption": self.section["tables"][table], "command": command})
                       for table in self.pretraining_tables()}

    def point_label(self, point: int) -> str:
        """A grid point's column: its learning rate and epochs."""
        training = training_config(self.config, radboud_checkpoint(next(iter(self.section["variants"])), point,
                                                                   self.section["folds"][0]))
        epochs = training["epochs"]
        return f"lr {training['learning_rate']:g}, {epochs:g} epoch{'s' if epochs != 1 else ''}"

    @property
    def points(self) -> list[int]:
        return list(range(1, len(self.section["grid"]) + 1))

    def rows(self, table: str) -> list[tuple[str, str, str]]:
        """(row label, variant, ranking) of a ranking table, in the configuration's order."""
        rows = []
        for name, spec in self.section["variants"].items():
            if table in spec["tables"]:
                rankings = spec["rankings"]
                rows += [(spec["label"] if len(rankings) == 1 and r == "relevant" else f"{spec['label']}, {ranking_label(r)}",
                          name, r) for r in rankings]
        return rows

    def run(self, variant: str, point: int, ranking: str) -> str:
        return f"radboud.{variant}.g{point}.{ranking}"

    def fold_scores(self, variant: str, point: int, ranking: str, first_stage: str | None = None) -> list[str]:
        section = self.section
        return [self.layout.path("radboud_scores", collection=self.slug, first_stage=first_stage or section["first_stage"],
                                 k=section["candidates"], ranking=ranking,
                                 checkpoint=radboud_checkpoint(variant, point, fold)) for fold in section["folds"]]

    def spec(self, table: str) -> dict[str, list[dict]]:
        """A ranking table's cells (reranker.formats.table_spec): per grid point the first stage, then each row;
        then the per-fold checkpoints behind it (their notes)."""
        first_label = FIRST_STAGES[self.section["first_stage"]].label
        first = self.layout.path("eval", collection=self.slug, run=self.section["first_stage"])
        evals = []
        for point in self.points:
            group = self.point_label(point)
            evals.append({"group": group, "row": first_label, "path": first})
            evals += [{"group": group, "row": label, "path": self.layout.path("eval", collection=self.slug, run=self.run(v, point, r))}
                      for label, v, r in self.rows(table)]
            for name in self.provided_in(table):  # last: the rows before them are the thesis' own rows
                evals += [{"group": group, "row": self.provided_row(name), "path": self.eval_path(name)},
                          {"group": group, "row": self.section["provided_candidates"][name]["label"],
                           "path": self.eval_path(self.provided_run(name, point))}]
        # how alike each reranker ranks to the baseline reranker (Kendall's tau over the candidates, mean over the
        # queries): with the head carried, every row starts out ranking as the baseline does
        values = [{"row": label, "column": AGREEMENT, "path": self.agreement(v, point, r), "key": "kendall_tau"}
                  for point in self.points[:1] for label, v, r in self.rows(table)]
        return {"eval": evals, "checkpoints": [{"label": label, "path": meta} for label, meta in self.checkpoint_metas(table)],
                "value": values, "value_format": [{"column": AGREEMENT, "format": ".3f"}], "note": self.provided_notes(table)}

    # A provided run (the collection's `runs`, e.g. the thesis' own BM25) reranked by the baseline's checkpoints ------
    def provided_in(self, table: str) -> list[str]:
        return [name for name, spec in self.section["provided_candidates"].items() if table in spec["tables"]]

    def provided_entry(self, name: str) -> dict:
        return self.config["collections"][self.section["collection"]]["runs"][name]

    def provided_row(self, name: str) -> str:
        """The provided run's own row: its first stage and whose it is, "BM25 (the thesis' run)"."""
        entry = self.provided_entry(name)
        return f"{FIRST_STAGES[entry['run_model']].label} ({entry['label']})"

    def provided_run(self, name: str, point: int) -> str:
        """The baseline's run over a provided run's candidates at a grid point."""
        return f"{self.baseline_run(point)}.on-{name}"

    def provided_scores(self, name: str, point: int) -> list[str]:
        first = next(iter(self.section["variants"]))
        return self.fold_scores(first, point, self.section["variants"][first]["rankings"][0], first_stage=name)

    def eval_path(self, run: str) -> str:
        return self.layout.path("eval", collection=self.slug, run=run)

    def split_table(self) -> str | None:
        """The table whose numbers split the gap to the thesis (the first provided run's first table), if any."""
        return next((spec["tables"][0] for spec in self.section["provided_candidates"].values()), None)

    def split_numbers(self) -> str:
        return self.layout.path("numbers", table=SPLIT)

    def split_measures(self) -> list[str]:
        """The two nDCG@20s the split is stated on: the thesis' own and the standard one, where the tables have them."""
        return [m for m in ("RadboudNDCG@20", "nDCG@20") if m in self.section["measures"]]

    def split_rows(self) -> dict[str, str]:
        """The rows the split reads (`tables split`): our first stage and baseline, the provided run and the baseline on it."""
        name = next(iter(self.section["provided_candidates"]))
        return {"first_stage": FIRST_STAGES[self.section["first_stage"]].label, "reranker": self.baseline_row(self.split_table()),
                "their_first_stage": self.provided_row(name), "on_theirs": self.section["provided_candidates"][name]["label"]}

    def baseline_run(self, point: int) -> str:
        """The baseline reranker's run (the first variant's first ranking) at a grid point."""
        first = next(iter(self.section["variants"]))
        return self.run(first, point, self.section["variants"][first]["rankings"][0])

    def agreement(self, variant: str, point: int, ranking: str) -> str:
        return self.layout.path("radboud_agreement", collection=self.slug, variant=variant, point=point, ranking=ranking)

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        """Every ranking table's cells, and every pre-training table's checkpoints."""
        specs = {table: self.spec(table) for table in self.ranking_tables()}
        specs |= {table: {"checkpoints": [{"label": label, "path": meta} for label, meta in self.pretrainings(table)]}
                  for table in self.pretraining_tables()}
        return specs

    def baseline_row(self, table: str) -> str | None:
        """The baseline reranker's row (the first variant's first ranking), if the table has it."""
        rows = self.rows(table)
        first = next(iter(self.section["variants"]))
        return next((label for label, v, _ in rows if v == first), None)

    def checkpoint_metas(self, table: str) -> list[tuple[str, str]]:
        """(label, reranker.json) of every per-fold checkpoint behind a ranking table (grid point 1)."""
        variants = dict.fromkeys(v for _, v, _ in self.rows(table))
        return [(self.section["variants"][v]["label"], self.layout.path("checkpoint_meta", checkpoint=radboud_checkpoint(v, 1, f)))
                for v in variants for f in self.section["folds"]]

    def pretrainings(self, table: str) -> list[tuple[str, str]]:
        """(label, reranker.json) of the pre-trained checkpoints of a pre-training table."""
        return [(spec.get("label", name), self.layout.path("checkpoint_meta", checkpoint=pretrained_checkpoint(name)))
                for name, spec in self.section["pretraining"].items() if table in spec["tables"]]

    def caption(self, table: str) -> str:
        section = self.section
        chain = self.exp.training_stages(section["base"])
        base = self.exp.hub_model(section["base"]) + (f" fine-tuned on {' → '.join(chain)} (`{section['base']}`), then per fold"
                                                  if chain else "")
        first = FIRST_STAGES[section["first_stage"]].label
        training = training_config(self.config, radboud_checkpoint(next(iter(section["variants"])), 1, section["folds"][0]))
        grid = "; ".join(self.point_label(p) for p in self.points)
        trained, scored = PRECISION_WORDS[training["precision"]], PRECISION_WORDS[section["precision"]]
        arithmetic = f"{trained}, training and scoring" if trained == scored else f"{trained} training, {scored} scoring"
        threads = f"{section['threads']} CPU thread{'s' if section['threads'] != 1 else ''}"
        return (f"{section['tables'][table]}. {section['collection']}, {first} top {section['candidates']} reranked "
                f"(the rest kept in order), one classifier per fold trained on that fold's training queries "
                f"({len(section['folds'])} fold{'s' if len(section['folds']) != 1 else ''}, test queries pooled); model: {base} "
                f"(max length {training['max_length']}, batch {training['batch_size']}, "
                f"{training['negatives_per_positive']} negatives per positive from the top {training['negatives_depth']}, "
                f"the step with the lowest held-out loss on {training['validation_fraction']:.0%} of the training queries); "
                f"{CARRIED_HEAD_WORDS if section.get('carry_head') else ''}grid: {grid}. "
                f"Hardware: {arithmetic}; {threads} per job (the machine: the numbers' provenance). "
                f"nDCG gains: Cranfield's codes mapped by collections.yaml `grades` (1 complete answer -> 4 .. "
                f"4 minimum interest -> 1, -1 -> 0); nDCG@20 (thesis): the thesis' own measure, the -1 document "
                f"counted as a complete answer (reranker/measures/radboud.py).")

    def provided_notes(self, table: str) -> list[dict]:
        """What the rows on a provided run's candidates are: a line under a table that has them (a note, not the
        caption, so that the tables before them keep theirs)."""
        notes = []
        for name in self.provided_in(table):
            row, label = self.provided_row(name), self.section["provided_candidates"][name]["label"]
            notes.append({"text": f"{label}: the baseline's own per-fold checkpoints (no new training) rerank the top "
                                  f"{self.section['candidates']} of {row}, the run `{name}` of collections.yaml, so that the "
                                  f"gap to the thesis splits into first stage and reranker "
                                  f"({PATTERNS['numbers'].format(table=SPLIT)}); † and ‡ on both rows test against our BM25 "
                                  f"and our baseline (‡ on {label}: the first stage's part, one reranker on two candidate "
                                  f"sets); a provided run's AP@1000 is over the documents it ranks."})
        return notes


PLUGIN = Radboud
