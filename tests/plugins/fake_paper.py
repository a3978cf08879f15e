"""A fourth paper, as a contributor would add one: this module, its rules (fake_paper.smk), its section
(`experiments: {fake_paper: ...}` with `plugins: [tests.plugins.fake_paper]`) and its claims.
Its one table: BM25 against BM25+RM3 on one collection (tests/test_plugins.py runs it through the DAG)."""

from __future__ import annotations

from reranker.core.registry import FIRST_STAGES
from reranker.experiments import register
from reranker.experiments.base import Plugin


@register
class FakePaper(Plugin, name="fake_paper", about="a test's paper: BM25 against BM25+RM3",
                rules="tests/plugins/fake_paper.smk"):
    schema = {"type": "object", "required": ["collection"], "additionalProperties": False,
              "properties": {"collection": {"type": "string"}, "caption": {"type": "string"}}}

    def outputs(self) -> list[str]:
        return [self.layout.path("table", table="fake_paper_1")]

    def evals(self) -> list[str]:
        return [self.layout.path("eval", collection=self.slug, run=run) for run in FIRST_STAGES]

    def table_specs(self) -> dict[str, dict[str, list[dict]]]:
        """Its table's cells, for the spec file the suite's rules write (reranker.formats.table_spec)."""
        group = self.section["collection"]
        return {"fake_paper_1": {"eval": [{"group": group, "row": FIRST_STAGES[run].label, "path": path}
                                          for run, path in zip(FIRST_STAGES, self.evals())]}}
