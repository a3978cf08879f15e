"""Adding a first-stage model or an aggregator is one registration plus config (docs/contributing.md);
a head, unit or objective is a name here and its behaviour in the module that owns it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reranker.core import config as cfg
from reranker.core import registry, settings
from reranker.experiments import load_config
from reranker.ranking.aggregation import aggregate
from reranker.stages import retrieve
from reranker.workflow.experiment import Experiment


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(registry.FIRST_STAGES, "bm25_rm3_20", registry.FirstStage("BM25+RM3 (20 terms)", rm3=True))
    monkeypatch.setitem(registry.AGGREGATORS, "top2p",
                        registry.Aggregator("Top2P", lambda s: sum(sorted(s)[-2:]) / len(sorted(s)[-2:])))
    cfg._core_schema.cache_clear(), cfg._schema.cache_clear()
    yield
    cfg._core_schema.cache_clear(), cfg._schema.cache_clear()


def test_a_new_first_stage_and_aggregator_reach_schema_rows_and_stages(registered):
    layer = {"retrieval": {"models": {"bm25_rm3_20": {"k1": 0.9, "b": 0.4, "fb_terms": 20, "fb_docs": 10,
                                                       "original_query_weight": 0.5}}},
             "birch": {"first_stage": "bm25_rm3_20", "aggregation": ["firstp", "maxp", "top2p"]}}
    config = load_config(overrides=layer)
    experiment = Experiment(config)
    labels = [label for label, _, _ in experiment.plugins["birch"].rows()]
    passage = experiment.label(config["birch"]["passage_checkpoint"])  # the aggregation rows' checkpoint
    assert labels[0] == "BM25+RM3 (20 terms)" and f"Top2P over sentences, {passage}" in labels
    assert any(e["group"] == "BM25+RM3 (20 terms)" and e["row"] == "cranfield" for e in experiment.baseline_spec()["eval"])
    assert "BM25+RM3 (20 terms) (fb_terms=20, fb_docs=10, original_query_weight=0.5)" in experiment.baselines_caption()
    assert re.fullmatch(registry.wildcard_pattern(registry.FIRST_STAGES), "bm25_rm3_20")
    default, _ = retrieve.params_from_settings(settings.retrieve(config, None, "bm25_rm3_20"), "bm25_rm3_20")
    assert default.fb_terms == 20 and "fb_terms=20" in default.describe()
    run = {"q": {"a": 3.0, "b": 2.0}}
    units = {"q": {"a": [0.1, 0.9, 0.5], "b": [0.8]}}
    assert aggregate(run, units, "top2p")["q"] == pytest.approx({"a": 0.7, "b": 0.8})


def test_an_unregistered_name_is_refused_by_the_schema():
    with pytest.raises(cfg.ConfigError, match="top2p"):
        load_config(overrides={"birch": {"aggregation": ["top2p"]}})


def test_every_registered_head_unit_and_objective_has_one_behaviour():
    # The registry stays light (the Snakefile imports it): the behaviour lives beside torch, under the same names.
    from reranker.neural import models, objectives
    from reranker.stages import segment

    assert models.LOADERS.keys() == registry.HEADS.keys()
    assert segment.BUILDERS.keys() == registry.UNITS.keys()
    assert objectives.RULES.keys() == registry.OBJECTIVES.keys()
    assert cfg._schema()["$defs"]["objective"]["enum"] == list(registry.OBJECTIVES)


def test_the_entrypoint_knows_every_stage():
    from reranker.__main__ import STAGES

    # The image's entrypoint runs a stage by name without starting Python first: its list must not drift.
    text = (Path(__file__).resolve().parent.parent / "containers" / "entrypoint").read_text()
    listed = re.search(r"^\s+((?:[a-z]+ \| )+[a-z]+)\)", text, re.M).group(1)  # the case of the stages
    assert [s.strip() for s in listed.split("|")] == list(STAGES)
