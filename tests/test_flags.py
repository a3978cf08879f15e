"""Flags through the schema (reranker.core.flags): a legal 0 is kept, a flag not given changes nothing, and a
length beyond a real model's position embeddings is refused in one line (train and score). The bad flags
themselves are cases of tests/bad_inputs/cases.yaml."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file, save_file

from reranker.core.flags import checked, overlay
from reranker.neural.training.settings import DEFAULT_TRAINING, TrainingConfig
from reranker.stages import score, train

FILES = Path(__file__).parent / "bad_inputs" / "files"
POSITIONS = 64


def test_a_zero_the_schema_allows_is_kept_not_replaced_by_the_default():
    args = train.parser().parse_args(["--out", "x", "--warmup", "0", "--weight-decay", "0", "--seed", "0",
                                      "--validation-fraction", "0"])
    flags = overlay({}, args, train.FLAGS)
    assert flags == {"warmup": 0, "weight_decay": 0, "seed": 0, "validation_fraction": 0}
    config = TrainingConfig.from_mapping(flags)
    assert (config.warmup, config.weight_decay, config.seed, config.validation_fraction) == (0, 0, 0, 0)
    assert DEFAULT_TRAINING.seed == 42 and DEFAULT_TRAINING.warmup > 0  # so not the defaults


def test_flags_not_given_leave_the_settings_as_they_are():
    settings = {"candidates": 30, "max_length": None, "shard_size": 20000}
    args = train.parser().parse_args(["--out", "x"])
    assert overlay({}, args, train.FLAGS) == {}
    assert overlay(settings, args, {"--max-length": "score.max_length", "--alpha": "significance.alpha"}) == settings


def test_a_nullable_setting_takes_a_value_and_an_enum_names_its_values():
    assert checked("--max-pairs", 5, "training.max_pairs") == 5
    with pytest.raises(ValueError, match=r"--head pooled: must be one of sequence_classification, .*bi_encoder "
                                         r"\(schema: training\.head\)"):
        checked("--head", "pooled", "training.head")


@pytest.fixture(scope="module")
def short_model(tiny_model_dir, tmp_path_factory) -> Path:
    """The tiny model cut to its first 64 position embeddings: a real checkpoint that reads 64 tokens at most."""
    out = tmp_path_factory.mktemp("short-positions")
    shutil.copytree(tiny_model_dir, out, dirs_exist_ok=True)
    weights = load_file(out / "model.safetensors")
    for key in [k for k in weights if k.endswith("position_embeddings.weight")]:
        weights[key] = weights[key][:POSITIONS].contiguous()
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "max_position_embeddings": POSITIONS}))
    return out


def test_a_max_length_beyond_the_models_positions_is_one_line(short_model, tmp_path, capsys):
    layer = {"run_dir": str(tmp_path / "run"), "checkpoints": {"short": {"source": "hf", "model": str(short_model)}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(layer))
    scored = ["--config", str(tmp_path / "config.yaml"), "--checkpoint", "short", "--segments", str(FILES / "segments.jsonl"),
              "--run", str(FILES / "run.txt"), "--topics", str(FILES / "topics.tsv"), "--no-cache", "--max-length", "128"]
    trained = ["--base", str(short_model), "--docs", str(FILES / "docs.jsonl"), "--topics", str(FILES / "topics.tsv"),
               "--qrels", str(FILES / "qrels.txt"), "--run", str(FILES / "run.txt"), "--max-length", "128", "--threads", "1"]
    for stage, argv, out in [(score, scored, tmp_path / "scores.tsv"), (train, trained, tmp_path / "ckpt")]:
        assert stage.main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        last = err.strip().splitlines()[-1]  # after the loader's progress bar
        assert "Traceback" not in err and last.startswith(f"{stage.__name__.split('.')[-1]}: error: "), err
        assert f"max_length 128 is longer than {short_model} can read (its max_position_embeddings is 64)" in last
        assert not out.exists()
