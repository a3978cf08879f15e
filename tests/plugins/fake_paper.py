"""A fourth paper, as a contributor would add one: this module (its `PLUGIN`), its rules (fake_paper.smk), its
section (`fake_paper:` at the top level, with `plugins: [tests.plugins.fake_paper]`) and its claims.

Its one table: BM25, BM25+RM3 and BM25 reranked by a hub checkpoint on one collection. The reranking is its own:
it asks the suite's middle rule to segment the first stage's top candidates as whole documents and score them
into files of its own (its `paths`, its `stage_jobs`), reranks with the suite's stages in its own rule, and has
the suite's table rule write its table (`table_jobs`). tests/test_plugins.py runs it through the DAG, Birch on."""

from __future__ import annotations

from reranker.core.registry import FIRST_STAGES
from reranker.experiments.base import Plugin, StageJob, TableJob, significance


class FakePaper(Plugin, name="fake_paper", about="a test's paper: BM25 against BM25+RM3 and a reranked BM25",
                rules="tests/plugins/fake_paper.smk"):
    section_schema = {
        "type": "object", "required": ["collection"], "additionalProperties": False,
        "properties": {"collection": {"type": "string"}, "caption": {"type": "string"},
                       "candidates": {"type": "integer", "minimum": 1, "default": 5},
                       "checkpoint": {"type": "string", "default": "minilm-l3"}}}
    paths = {"fake_segments": "work/segments/{collection}/bm25.k{k}.fake-docs.jsonl",
             "fake_scores": "work/scores/{collection}/{checkpoint}/bm25.k{k}.fake-docs.tsv"}

    @classmethod
    def cross_check(cls, config):
        section = config["fake_paper"]
        known = section["collection"] in config["collections"]
        problems = [] if known else [f"  fake_paper/collection: unknown collection {section['collection']!r}"]
        return problems, [("fake_paper/checkpoint", section["checkpoint"])]

    @property
    def candidates(self) -> int:
        return self.section["candidates"]

    def reranked(self) -> str:
        """Its reranked run's name."""
        return f"fake.{self.section['checkpoint']}"

    def outputs(self) -> list[str]:
        return [self.layout.path("table", table="fake_paper_1")]

    def stage_jobs(self) -> list[StageJob]:
        """BM25's top candidates as whole documents, and its checkpoint's scores of them (no cache: a test's run)."""
        pattern = self.layout.pattern
        segments = pattern("fake_segments", k=self.candidates)
        inputs = {"run": pattern("trec_run", run="bm25"), "topics": pattern("topics")}
        return [
            StageJob("fake_segment", "segment", {"docs": pattern("docs"), **inputs}, {"segments": segments}, "{collection}.fake",
                     "segment --config {params.config} --section fake_paper --docs {input.docs} --run {input.run}"
                     " --topics {input.topics} --unit documents --out {output}",
                     {"settings": self.exp.settings("segment", section="fake_paper")}),
            self.score_job("fake_score", {"segments": segments, **inputs, "qrels": pattern("qrels")},
                           {"scores": pattern("fake_scores", k=self.candidates)}, "{collection}.{checkpoint}.fake",
                           "score --config {params.config} --section fake_paper --checkpoint {wildcards.checkpoint}"
                           " --model {params.model:q} --no-cache --segments {input.segments} --run {input.run}"
                           " --topics {input.topics} --qrels {input.qrels} --threads {threads} --out {output.scores}"),
        ]

    def table_jobs(self) -> dict[str, TableJob]:
        """Its rows, with the suite's significance marks."""
        return {"fake_paper_1": TableJob(
            "fake_paper_table", {"evals": self.exp.spec_files("fake_paper_1")},
            "results --spec {input.spec} --measures AP@1000 P@20 --baseline-row BM25 {params.significance}"
            " --caption {params.caption:q} --formats md csv tex html --out {params.out} --numbers {output.numbers}",
            {"caption": self.section.get("caption", "A fourth paper's table"), "significance": significance(self.config)})}

    def rows(self) -> list[tuple[str, str]]:
        """(row label, run name) of its table."""
        return [(FIRST_STAGES[run].label, run) for run in FIRST_STAGES] + [(f"BM25 >> {self.section['checkpoint']}", self.reranked())]

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        """Its table's cells, for the spec file the suite's rules write (reranker.formats.table_spec)."""
        group = self.section["collection"]
        return {"fake_paper_1": {"eval": [{"group": group, "row": label, "path": self.layout.path("eval", collection=self.slug, run=run)}
                                          for label, run in self.rows()]}}


PLUGIN = FakePaper
