"""Every stage, end to end, on the tiny collection in .test/ with a random-weight BERT: no offline
cache, no hub. It checks the stages' plumbing and formats, not the numbers of a trained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reranker.experiments import load_config
from reranker.formats.folds import read_folds
from reranker.formats.runs import read_run
from reranker.stages import collections, evaluate, fuse, index, retrieve, score, segment
from reranker.workflow.experiment import Experiment

REPO = Path(__file__).resolve().parent.parent
LAYER = REPO / ".test" / "config" / "config.yaml"


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A 2-layer BERT with random weights and a word-level vocabulary of the tiny corpus."""
    import re

    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = sorted({w for path in (REPO / ".test" / "data" / "tiny").iterdir()
                    for w in re.findall(r"[a-z]+", path.read_text().lower())})
    out = tmp_path_factory.mktemp("tiny-bert")
    (out / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", "."] + words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(out / "vocab.txt"))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=2)
    import torch

    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture
def layered(tiny_bert, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("BIRCH_TEST_DATA", str(REPO / ".test" / "data"))
    monkeypatch.setenv("TINY_BERT", str(tiny_bert))
    monkeypatch.delenv("IR_DATASETS_HOME", raising=False)  # nothing may come from a cache
    return LAYER


@pytest.mark.slow
def test_every_stage_on_the_tiny_collection(layered, tiny_bert, tmp_path):
    config = load_config(layered)
    assert Path(Experiment(config).settings("segment")["tokenizer"]) == tiny_bert  # segment's token budget: the scorer's tokenizer
    work = tmp_path / "tiny"
    c = ["--config", str(layered)]
    assert collections.main(["export", *c, "--collection", "tiny", "--out", str(work)]) == 0
    assert collections.main(["folds", *c, "--collection", "tiny", "--out", str(tmp_path / "folds.json")]) == 0
    assert len(read_folds(tmp_path / "folds.json")) == config["seeded_folds"]["k"]
    assert index.main([*c, "--docs", str(work / "docs.jsonl"), "--index", str(tmp_path / "index"), "--threads", "1"]) == 0
    files = {"--topics": str(work / "topics.tsv"), "--index": str(tmp_path / "index")}
    for model in ("bm25", "bm25_rm3"):
        argv = [*c, "--collection", "tiny", "--model", model, "--out", str(tmp_path / f"{model}.run"),
                "--folds", str(tmp_path / "folds.json"), *[x for kv in files.items() for x in kv]]
        assert retrieve.main(argv) == 0
    run = read_run(tmp_path / "bm25_rm3.run")
    assert len(run) == 5 and all(len(docs) <= 20 for docs in run.values())
    # The per-fold override of the layer changes fold 1's queries only.
    assert read_run(tmp_path / "bm25.run") != run

    segments = tmp_path / "sentences.jsonl"
    assert segment.main([*c, "--docs", str(work / "docs.jsonl"), "--run", str(tmp_path / "bm25_rm3.run"),
                         "--topics", str(work / "topics.tsv"), "--unit", "sentences", "--out", str(segments)]) == 0
    scores = tmp_path / "scores.tsv"
    assert score.main([*c, "--checkpoint", "tiny-bert", "--segments", str(segments), "--run", str(tmp_path / "bm25_rm3.run"),
                       "--topics", str(work / "topics.tsv"), "--qrels", str(work / "qrels.txt"), "--no-cache",
                       "--out", str(scores)]) == 0
    meta = json.loads(Path(str(scores) + ".meta.json").read_text())
    assert meta["pairs"] == len(scores.read_text().splitlines()) > 0
    fused = tmp_path / "birch.run"
    assert fuse.main(["birch", "--section", "birch", *c, "--collection", "tiny", "--run", str(tmp_path / "bm25_rm3.run"),
                      "--scores", str(scores),
                      "--qrels", str(work / "qrels.txt"), "--folds", str(tmp_path / "folds.json"), "--top-n", "2",
                      "--out", str(fused), "--params-out", str(tmp_path / "birch.json")]) == 0
    assert fuse.main(["aggregate", "--method", "maxp", "--run", str(tmp_path / "bm25_rm3.run"), "--scores", str(scores),
                      "--out", str(tmp_path / "maxp.run")]) == 0
    for name in ("bm25_rm3", "birch", "maxp"):
        out = tmp_path / f"{name}.json"
        assert evaluate.main([*c, "--collection", "tiny", "--run", str(tmp_path / f"{name}.run"),
                              "--qrels", str(work / "qrels.txt"), "--out", str(out)]) == 0
        assert set(json.loads(out.read_text())["aggregate"]) == set(config["measures"])
    # BM25 finds the tiny topics: each query's own five documents come first.
    assert json.loads((tmp_path / "bm25_rm3.json").read_text())["aggregate"]["P@20"] > 0.2
