"""Heads follow how a base was trained: sentence-transformers' pooling config, else BERT's [CLS]."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from reranker.formats.errors import InputError, input_error_line
from reranker.neural import models


def test_the_head_matches_the_pooling_the_base_was_trained_with(tiny_model_dir, tmp_path):
    assert models.base_pooling("sentence-transformers/all-MiniLM-L6-v2") == "mean"
    assert models.default_head("sentence-transformers/all-MiniLM-L6-v2") == "mean_pooling"
    # The offline copy of paraphrase-MiniLM-L3-v2 has no 1_Pooling: the config names its head instead.
    assert models.base_pooling("sentence-transformers/paraphrase-MiniLM-L3-v2") is None
    assert models.default_head("sentence-transformers/paraphrase-MiniLM-L3-v2") == "sequence_classification"

    local = tmp_path / "cls-pooled"
    local.mkdir()
    (local / "modules.json").write_text(json.dumps([{"idx": 1, "name": "1", "path": "1_Pooling",
                                                     "type": "sentence_transformers.models.Pooling"}]))
    (local / "1_Pooling").mkdir()
    (local / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True,
                                                                 "pooling_mode_mean_tokens": False}))
    assert models.default_head(str(local)) == "sequence_classification"
    (local / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(models.CheckpointError, match="'max' pooling"):
        models.default_head(str(local))


def test_a_mean_pooled_classifier_round_trips_and_ignores_padding(tmp_path):
    classifier = models.load_classifier("sentence-transformers/all-MiniLM-L6-v2", num_layers=2, seed=3)
    assert classifier.head == "mean_pooling" and classifier.relevant_index == 1
    classifier.model.save_pretrained(tmp_path)
    classifier.tokenizer.save_pretrained(tmp_path)
    models.write_meta(tmp_path, {"head": classifier.head, "relevant_index": 1})
    again = models.load_classifier(str(tmp_path))
    assert again.head == "mean_pooling" and again.fingerprint == classifier.fingerprint

    tokenizer = classifier.tokenizer
    alone = tokenizer("wing flutter", "flutter of a swept wing", return_tensors="pt")
    padded = tokenizer(["wing flutter", "a much longer query about boundary layers"],
                       ["flutter of a swept wing", "transition in a boundary layer at high speed"],
                       padding=True, return_tensors="pt")
    with torch.inference_mode():
        assert torch.allclose(again.model(**alone).logits[0], again.model(**padded).logits[0], atol=1e-5)


@pytest.mark.parametrize("head", list(models.LOADERS))
def test_every_head_loads_with_its_outputs(head):
    # num_labels sizes a linear classifier; NSP keeps its two logits and a bi-encoder its one cosine.
    classifier = models.load_classifier("sentence-transformers/all-MiniLM-L6-v2", head=head, num_layers=1, num_labels=3)
    assert classifier.head == head and classifier.n_logits == {"next_sentence_prediction": 2, "bi_encoder": 1}.get(head, 3)
    assert classifier.relevant_index == classifier.n_logits - 1


def test_an_unknown_head_is_refused_by_name():
    with pytest.raises(models.CheckpointError, match="unknown head 'pooled'; use one of sequence_classification"):
        models.load_classifier("sentence-transformers/all-MiniLM-L6-v2", head="pooled")


def _damage_weights(d):
    (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:1000])  # a copy cut short


def _other_shape(d):
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2}))


@pytest.mark.parametrize("damage, message", [
    (_damage_weights, r"\(SafetensorError: .*\): it is damaged or incomplete; train or fetch it again"),
    (lambda d: (d / "tokenizer.json").write_text("{"), r"\(JSONDecodeError: .*\): it is damaged or incomplete"),
    (lambda d: (d / models.META_FILE).write_text("{"), r"reranker\.json: not JSON .*: the checkpoint is damaged"),
    (_other_shape, r"\(RuntimeError: .*\): it is damaged or incomplete"),
])
def test_a_damaged_local_checkpoint_is_one_line_naming_it(tiny_model_dir, tmp_path, damage, message):
    """Four ways a saved checkpoint breaks (weights cut short, tokenizer or meta not JSON, a config of another
    shape): each a CheckpointError (an input error: one line, exit 2), never a library's traceback."""
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir, folder)
    damage(folder)
    with pytest.raises(models.CheckpointError, match=message) as caught:
        models.load_classifier(str(folder))
    assert input_error_line(caught.value) is not None and "\n" not in input_error_line(caught.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with a GPU has cuda")
def test_a_named_device_this_machine_lacks_is_refused_first():
    with pytest.raises(InputError, match=r"--device cuda: no CUDA device here"):
        models.pick_device("cuda")
    with pytest.raises(InputError, match=r"not a device torch knows"):
        models.pick_device("gpu")
    assert models.pick_device("cpu").type == "cpu"
