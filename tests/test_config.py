"""Configuration: defaults from the schema, layers, the resolved file, registry-derived enums."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reranker import experiments
from reranker.core import config as cfg
from reranker.core.registry import AGGREGATORS, FIRST_STAGES, HEADS


def test_every_setting_has_a_default_and_a_description():
    """Leaves of the schema's default document are described where they are defined."""
    schema = cfg.schema()

    def walk(node, path):
        node = cfg._node(node)
        for key, child in node.get("properties", {}).items():
            child = cfg._node(child)
            if "properties" in child:
                walk(child, path + [key])
            else:
                assert child.get("description"), f"{'/'.join(path + [key])} has no description"

    walk(schema, [])
    defaults = cfg.defaults()
    assert defaults["segment"]["candidates"] == 30 and defaults["training"]["learning_rate"] == 1e-4
    assert "training" not in cfg.defaults(schema["$defs"]["checkpoint"])  # per-checkpoint overrides stay sparse


def test_a_file_with_one_collection_is_enough(tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text(yaml.safe_dump({"collections": {"mine": {"source": "ir_datasets", "dataset": "vaswani"}},
                                     "baselines": {"collections": ["mine"]}}))
    config = experiments.load_config(extra)
    assert config["collections"]["mine"]["relevant_min_grade"] == 1  # an entry's own defaults
    assert "cranfield" in config["collections"]  # the registries are still there
    assert config["baselines"]["collections"] == ["mine"] and config["birch"]["targets"]  # the default experiment too


def test_a_resolved_file_is_read_alone(tmp_path, monkeypatch):
    config = experiments.load_config(cfg.CONFIG_DIR / "quick.yaml")
    path = cfg.write_resolved(config, tmp_path / "config.yaml", ["workflow/config/quick.yaml"])
    monkeypatch.setattr(cfg, "DEFAULT_EXPERIMENT", tmp_path / "absent.yaml")  # reading it would fail
    again = experiments.load_config(path)
    assert {k: v for k, v in again.items() if k != "resolved_from"} == config
    # As a stage reads it (no plugin imported): the same, but that the plugins' generated checkpoints get the
    # entries' defaults (start_early, which orders jobs and is no stage's setting: settings.SCHEDULING_ONLY).
    staged = cfg.load_config(path)
    assert {k: v for k, v in staged.items() if k not in ("resolved_from", "checkpoints")} == {
        k: v for k, v in config.items() if k != "checkpoints"}
    assert {name: {k: v for k, v in entry.items() if k != "start_early"} for name, entry in staged["checkpoints"].items()} == {
        name: {k: v for k, v in entry.items() if k != "start_early"} for name, entry in config["checkpoints"].items()}


def test_names_must_exist_in_the_registries(tmp_path):
    extra = tmp_path / "bad.yaml"
    extra.write_text(yaml.safe_dump({"birch": {"targets": ["nope"], "checkpoints": ["missing"]}}))
    with pytest.raises(cfg.ConfigError, match="unknown collection 'nope'.*\n.*unknown checkpoint 'missing'"):
        experiments.load_config(extra)


def test_a_training_setting_naming_a_checkpoint_must_name_a_known_one(tmp_path):
    extra = tmp_path / "bad.yaml"
    extra.write_text(yaml.safe_dump({"radboud": {"training": {"head_from": "nobody"}}}))
    with pytest.raises(cfg.ConfigError, match=r"checkpoints/radboud-baseline-g1-f1/training/head_from: unknown checkpoint 'nobody'"):
        experiments.load_config(extra)


def test_ntnu_distilled_cells_name_rows_and_models(tmp_path):
    extra = tmp_path / "bad.yaml"
    extra.write_text(yaml.safe_dump({"ntnu": {"collection": "beir/scifact/test", "tables": {"ntnu_5_6": {
        "caption": "5.6", "distilled": {"head-only": "distilled-layers-2", "layers-2": "nobody", "layers-4": "distilled-layers-1"}}}}}))
    with pytest.raises(cfg.ConfigError) as err:
        experiments.load_config(extra)
    message = str(err.value)
    assert "'head-only' is not a row of ntnu_5_6" in message and "unknown model 'nobody'" in message
    # The defaults merge under: distilled-layers-4, now in no table and no distilled cell, would train for nothing.
    assert "ntnu/models/distilled-layers-4: in no table" in message


def test_an_overlay_drops_a_row_named_null_and_what_still_names_it_is_refused(tmp_path):
    extra = tmp_path / "fewer.yaml"
    extra.write_text(yaml.safe_dump({"radboud": {"variants": {"regression-binary": None}},
                                     "ntnu": {"models": {"head-seed-3": None}}}))
    config = experiments.load_config(extra)
    assert "regression-binary" not in config["radboud"]["variants"] and "head-seed-3" not in config["ntnu"]["models"]
    assert not any("regression-binary" in name or name == "ntnu-head-seed-3" for name in config["checkpoints"])
    assert "regression-log" in config["radboud"]["variants"] and "head-seed-2" in config["ntnu"]["models"]
    # A dropped model that a table's distilled cell still names is refused, not silently left out.
    extra.write_text(yaml.safe_dump({"ntnu": {"models": {"distilled-layers-2": None}}}))
    with pytest.raises(cfg.ConfigError, match="ntnu_5_6/distilled/layers-2: unknown model 'distilled-layers-2'"):
        experiments.load_config(extra)
    # ...unless the cell goes too (each plugin drops its own nulls: its named_rows)
    extra.write_text(yaml.safe_dump({"ntnu": {"models": {"distilled-layers-2": None},
                                              "tables": {"ntnu_5_6": {"distilled": {"layers-2": None}}}}}))
    assert "layers-2" not in experiments.load_config(extra)["ntnu"]["tables"]["ntnu_5_6"]["distilled"]
    with pytest.raises(cfg.ConfigError, match=r"scifact-soft.* and \d+ generated ones \(radboud-\*, ntnu-\*\)"):
        cfg.checkpoint_config(experiments.load_config(), "nobody", experiments.checkpoint_prefixes())


def test_ntnu_training_presets_sit_between_the_section_and_the_model(tmp_path):
    config = experiments.load_config()
    presets, section = config["ntnu"]["training_presets"], config["ntnu"]["training"]
    small = cfg.training_config(config, "ntnu-layers-2")
    assert small["max_pairs"] == presets["small"]["max_pairs"] != section["max_pairs"] and small["num_layers"] == 2
    assert cfg.training_config(config, "ntnu-bert")["max_pairs"] == section["max_pairs"]
    extra = tmp_path / "bad.yaml"
    extra.write_text(yaml.safe_dump({"ntnu": {"models": {"layers-1": {"label": "x", "tables": [], "preset": "tiny"}}}}))
    with pytest.raises(cfg.ConfigError, match="ntnu/models/layers-1/preset: unknown preset 'tiny'"):
        experiments.load_config(extra)


def test_ntnu_trains_on_the_passages_it_scores(tmp_path):
    """One passage window: ntnu/passages (scoring) and its passage models' training.passage_* must agree."""
    config = experiments.load_config()
    training = cfg.training_config(config, "ntnu-bert")
    assert training["unit"] == "passages"
    assert {k: training[f"passage_{k}"] for k in ("length", "stride", "title")} == config["ntnu"]["passages"]
    extra = tmp_path / "window.yaml"
    extra.write_text(yaml.safe_dump({"ntnu": {"passages": {"stride": 100}}}))
    with pytest.raises(cfg.ConfigError, match=r"ntnu/models/bert: trains on passages .*'stride': 75.* but ntnu/passages "
                                              r"scores .*'stride': 100"):
        experiments.load_config(extra)
    extra.write_text(yaml.safe_dump({"ntnu": {"passages": {"stride": 100}, "training": {"passage_stride": 100}}}))
    assert experiments.load_config(extra)["ntnu"]["passages"]["stride"] == 100


def test_schema_concepts_are_defined_once():
    """Precision, max length, passage windows and the significance level: one $defs entry each, referenced."""
    schemas = (Path(cfg.__file__).resolve().parents[2] / "workflow" / "schemas").glob("**/*.yaml")
    for path in schemas:
        body = path.read_text()
        assert "enum: [auto, exact, fast]" not in body or path.name == "config.schema.yaml", path
        assert body.count("enum: [auto, exact, fast]") <= 1 and body.count("maximum: 512") <= 1, path
    assert cfg.default("significance.alpha") == 0.05 and cfg.setting("score.precision")["enum"] == ["auto", "exact", "fast"]


def test_unknown_keys_and_bad_enums_are_refused(tmp_path):
    extra = tmp_path / "bad.yaml"
    extra.write_text(yaml.safe_dump({"segment": {"candidatez": 3}, "birch": {"aggregation": ["medianp"]}}))
    with pytest.raises(cfg.ConfigError) as err:
        experiments.load_config(extra)
    assert "candidatez" in str(err.value) and "medianp" in str(err.value)


def test_enums_come_from_the_registry():
    defs = cfg.schema()["$defs"]
    assert defs["aggregator"]["enum"] == list(AGGREGATORS)
    assert defs["first_stage"]["enum"] == list(FIRST_STAGES)
    assert defs["head"]["enum"] == list(HEADS)


@pytest.mark.parametrize("profile", ["default", "quick", "paper"])
def test_profiles_resolve(profile):
    extra = [] if profile == "default" else [cfg.CONFIG_DIR / f"{profile}.yaml"]
    config = experiments.load_config(extra)
    assert config["run_dir"] == f"runs/{profile}"
