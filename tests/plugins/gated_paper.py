"""A test's plugin with one job that holds its run until the test opens a gate (tests/test_run_lock.py):
a run that is certainly still going when a second `snakemake` starts on its run folder."""

from __future__ import annotations

from reranker.experiments.base import Plugin


class GatedPaper(Plugin, name="gated_paper", about="a test's job that waits for a gate file",
                 rules="tests/plugins/gated_paper.smk"):
    section_schema = {"type": "object", "required": ["collection", "gate"], "additionalProperties": False,
                      "properties": {"collection": {"type": "string"}, "gate": {"type": "string"}}}
    # The job's output: the collection's document count, written once the gate is open.
    paths = {"gated_count": "work/gated/{collection}.count"}


PLUGIN = GatedPaper
