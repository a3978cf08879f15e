"""Birch (Akkalyoncu Yilmaz et al., EMNLP 2019): sentence evidence fused with the first stage.

The main table: the first stage, each checkpoint's 1S-3S fusion rows, and the aggregation rows, on
every target collection; its notes and loss curves. Its configuration: `birch:` (schema:
workflow/schemas/sections/birch.yaml); its rules: workflow/rules/birch.smk (segment, score, fuse, aggregate,
the main table and the evidence page; the training rule is the suite's, workflow/rules/training.smk).
"""

from __future__ import annotations

from collections.abc import Mapping

from reranker.core import settings
from reranker.core.config import ConfigError, slug
from reranker.core.registry import AGGREGATORS, FIRST_STAGES
from reranker.experiments.base import PRECISION_WORDS, Plugin, StageJob


class Birch(Plugin, name="birch"):
    paths = {
        "fusion_params": "work/fusion/{collection}/birch.{checkpoint}.{n}S.json",
        "fusion": "fusion",  # published: the chosen a, w per fold, beside the main table
        "evidence_moves": "evidence/birch_moves.html",  # shown in the report; neither compared nor promoted
    }
    published = ("fusion",)

    @classmethod
    def enabled(cls, config: Mapping) -> bool:
        return bool(cls.section_of(config).get("targets"))

    @classmethod
    def check(cls, config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
        """Its names are checked whether or not its table is asked for (a section left for later stays sound)."""
        return cls.cross_check(config)

    @classmethod
    def cross_check(cls, config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
        """Its targets are known collections; its checkpoints go back to be checked to exist."""
        section, collections = config["birch"], config["collections"]
        problems = [f"  birch/targets: unknown collection {c!r} (known: {', '.join(sorted(collections))})"
                    for c in section["targets"] if c not in collections]
        used = [("birch/checkpoints", c) for c in section["checkpoints"]]
        used += [("birch/passage_checkpoint", c) for c in [section["passage_checkpoint"]] if c]
        return problems, used

    @classmethod
    def resolved(cls, config: Mapping) -> dict:
        """`segment.tokenizer`, where the configuration leaves it null: its first checkpoint's hub model's (every
        paper's segments are cut to the token budget of the model that scores Birch's sentences); "" without one."""
        if config["segment"].get("tokenizer") is not None:
            return {}
        names = config["birch"]["checkpoints"]
        try:
            tokenizer = settings.hub_model(config, names[0]) if names else ""
        except (ConfigError, KeyError):  # an unknown checkpoint: the cross-check names it
            return {}
        return {"segment": {"tokenizer": tokenizer}}

    # The DAG's shape: the run it segments and fuses, its K, its targets.
    @property
    def first_stage(self) -> str:
        return self.section["first_stage"]

    @property
    def candidates(self) -> int:
        """K: the first stage's top documents reranked (the suite's `segment.candidates`)."""
        return self.config["segment"]["candidates"]

    def stage_jobs(self) -> list[StageJob]:
        """Sentences (pysbd) or fixed word passages of the first stage's top-K documents; every (query, unit) of
        them scored, cached by content and resumable by shard. With score.parts = N > 1, one score job per block
        of shards ({part} = I-of-N), which its gather rule joins (workflow/rules/birch.smk)."""
        pattern, score = self.layout.pattern, self.config["score"]
        segments = pattern("segments", first_stage=self.first_stage, k=self.candidates)
        inputs = {"run": pattern("trec_run", run=self.first_stage), "topics": pattern("topics")}
        sharded = score["parts"] > 1
        scores = pattern("scores_part" if sharded else "scores", first_stage=self.first_stage, k=self.candidates)
        return [
            StageJob("segment", "segment", {"docs": pattern("docs"), **inputs}, {"segments": segments}, "{collection}.{unit}",
                     "segment --config {params.config} --docs {input.docs} --run {input.run} --topics {input.topics}"
                     " --unit {wildcards.unit} --out {output}",
                     {"settings": self.exp.settings("segment")}),
            self.score_job("score", {"segments": segments, **inputs, "qrels": pattern("qrels")},
                           {"scores": scores, "meta": f"{scores}.meta.json"},
                           "{collection}.{checkpoint}.{unit}" + (".part{part}" if sharded else ""),
                           "score --config {params.config} --checkpoint {wildcards.checkpoint} --model {params.model:q}"
                           " --cache {params.cache:q} --segments {input.segments} --run {input.run} --topics {input.topics}"
                           " --qrels {input.qrels} --part {params.part} --threads {threads} --out {output.scores}",
                           threads=score["threads"] or self.config["threads"], cache=self.layout.path("score_cache"),
                           part=lambda w: w.get("part", "1-of-1").replace("-of-", "/")),
        ]

    @property
    def target_slugs(self) -> list[str]:
        return [slug(t) for t in self.section["targets"]]

    def collections(self) -> list[str]:
        """Collection ids whose files the DAG needs before any job starts: its targets."""
        return list(self.section["targets"])

    def copied_curves(self) -> list[str]:
        return [self.layout.path("figure", figure=f"checkpoint_{c}_loss") for c in self.table_finetuned]

    def outputs(self) -> list[str]:
        return [self.layout.path("table", table="birch_main")]

    def pages(self) -> list[str]:
        return [self.layout.path("evidence_moves")]

    def evidence_runs(self) -> list[tuple[str, str]]:
        """(collection slug, fused run name) whose largest moves the report shows: per target, the first checkpoint
        that applies to it, fused with the most sentences."""
        n = max(self.section["fusion"]["top_n"])
        first = {}
        for s, c in self.scored():
            first.setdefault(s, c)
        return [(s, f"birch.{c}.{n}S") for s, c in first.items()]

    def scored(self) -> list[tuple[str, str]]:
        """(target slug, checkpoint) of every sentence scoring and fusion: each checkpoint on the targets it applies
        to (none on its own training data), in the configuration's order."""
        return [(s, c) for s in self.target_slugs for c in self.section["checkpoints"]
                if self.exp.applies_to(c, self.exp.slug_to_id[s])]

    @property
    def units(self) -> list[str]:
        """The units the passage checkpoint's aggregation rows read: sentences, and passages where it aggregates."""
        return ["sentences"] + (["passages"] if self.section["passage_checkpoint"] and self.section["aggregation"] else [])

    def rows(self) -> list[tuple[str, str, str | None]]:
        """(row label, run name, checkpoint) of the main table, in order."""
        rows: list[tuple[str, str, str | None]] = [(FIRST_STAGES[self.first_stage].label, self.first_stage, None)]
        for name in self.section["checkpoints"]:
            rows += [(f"{self.exp.label(name)} {n}S", f"birch.{name}.{n}S", name) for n in self.section["fusion"]["top_n"]]
        passage = self.section["passage_checkpoint"]
        if passage:
            for unit in self.units:
                rows += [(f"{AGGREGATORS[m].label} over {unit}, {self.exp.label(passage)}", f"{m}.{passage}.{unit}", passage)
                         for m in self.section["aggregation"]]
        if "maxp" in self.section["aggregation"]:  # every other checkpoint's sentence evidence on its own, too
            rows += [(f"{AGGREGATORS['maxp'].label} over sentences, {self.exp.label(name)}", f"maxp.{name}.sentences", name)
                     for name in self.section["checkpoints"] if name != passage]
        return rows

    def cells(self) -> list[tuple[str, str, str]]:
        """(collection slug, row label, run name) of every cell that exists: no checkpoint on its own training data."""
        return [(s, label, run) for s in self.target_slugs for label, run, name in self.rows()
                if name is None or self.exp.applies_to(name, self.exp.slug_to_id[s])]

    @property
    def table_finetuned(self) -> list[str]:
        """Fine-tuned checkpoints behind any row of the main table (each gets a note and a loss curve)."""
        names = self.section["checkpoints"] + ([self.section["passage_checkpoint"]] if self.section["passage_checkpoint"] else [])
        return self.exp.finetuned(dict.fromkeys(names))

    def fusion_params(self) -> list[str]:
        """The choices of a and w per fold of every fused row of the main table (its `fusion/` folder)."""
        return [self.layout.path("fusion_params", collection=s, checkpoint=c, n=n) for s, c in self.scored()
                for n in self.section["fusion"]["top_n"]]

    def score_metas(self) -> list[str]:
        return [self.layout.path("scores_meta", collection=s, checkpoint=c, first_stage=self.first_stage, k=self.candidates,
                                 unit="sentences") for s, c in self.scored()]

    def spec(self) -> dict[str, list[dict]]:
        """The main table's cells (reranker.formats.table_spec): its evaluations, then each fine-tuned checkpoint
        behind it (its note)."""
        evals = [{"group": self.exp.slug_to_id[s], "row": label, "path": self.layout.path("eval", collection=s, run=run)}
                 for s, label, run in self.cells()]
        checkpoints = [{"label": self.exp.label(c), "path": self.layout.path("checkpoint_meta", checkpoint=c)}
                       for c in self.table_finetuned]
        return {"eval": evals, "checkpoints": checkpoints}

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        return {"birch_main": self.spec()}

    def training_text(self, name: str) -> str:
        """A checkpoint's training in words: each stage's collections, mixed (+) or in turn (→), and its own settings."""
        entry = self.exp.checkpoint(name)
        if entry["source"] != "finetune":
            return ""
        before = self.training_text(entry["base"])
        sources = (" + " if entry.get("mix") else " → ").join(entry["train_on"])
        own = entry.get("training", {})
        settings = ", ".join(f"{key.replace('_', ' ')} {value:g}" if isinstance(value, float) else f"{key.replace('_', ' ')} {value}"
                             for key, value in own.items() if key in ("learning_rate", "max_pairs", "epochs"))
        return (f"{before} → " if before else "") + sources + (f" ({settings})" if settings else "")

    def head_text(self, name: str) -> str:
        """What a fine-tuned checkpoint's head makes of it, where that is not a cross-encoder's classifier."""
        if self.exp.checkpoint(name).get("training", {}).get("head") != "bi_encoder":
            return ""
        return (", as a bi-encoder: a two-way classifier of the cosine of query and text encoded apart, started at the "
                "zero-shot cosine, and scored by that cosine")

    def caption(self, table: str = "birch_main") -> str:
        fine_tuned = self.exp.finetuned(self.section["checkpoints"])
        models = "; ".join(f"{self.exp.label(c)} = {self.exp.hub_model(c)} fine-tuned on {self.training_text(c)}{self.head_text(c)}"
                           for c in fine_tuned)
        titled = sorted({cid for c in fine_tuned for cid in self.exp.training_chain(c)
                         if self.exp.collection(slug(cid)).get("source") == "titles"})
        parents = ", ".join(self.exp.collection(slug(cid))["of"] for cid in titled)
        training = self.config["training"]
        negatives = FIRST_STAGES[training["negatives_from"]].label
        titles_text = (f" {', '.join(titled)}: each document's title as a query of its own body, with {negatives} negatives from the "
                       f"same collection: the documents of {parents}, never their queries or judgments." if titled else "")
        references = [c for c in self.section["checkpoints"] if self.exp.checkpoint(c).get("head") == "bi_encoder"]
        reference_text = (f" Reference rows, not Birch's classifier: {', '.join(self.exp.label(c) for c in references)}, "
                          f"the cosine of the mean-pooled query and sentence vectors as S_i in the same fusion."
                          if references else "")
        return (f"Birch on open collections, cross-domain (no checkpoint is trained on the queries or judgments of a "
                f"collection it is evaluated on). "
                f"{FIRST_STAGES[self.first_stage].label} top {self.candidates} documents reranked, the rest kept in order; "
                f"sentences by pysbd, max length {self.config['segment']['max_length']} tokens, scored in "
                f"{PRECISION_WORDS[self.config['score']['precision']]}; {models}"
                f" (shared settings: a cross-encoder's classification head on the pooling the base was trained with; "
                f"lr {training['learning_rate']}, "
                f"{training['negatives_per_positive']} {negatives} negatives per positive, {training['epochs']} epochs, "
                f"max length {training['max_length']}, the step with the lowest held-out loss on "
                f"{training['validation_fraction']:.0%} of the training queries; a checkpoint's own settings in brackets)."
                f"{titles_text} a, w2, w3 chosen by "
                f"{self.config['seeded_folds']['k']}-fold CV on AP (folds in {self.config['reference']}/folds/).{reference_text}")


PLUGIN = Birch
