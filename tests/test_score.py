"""Scoring with a real (tiny) model: batched = one pair at a time, kill/resume, cache, clear errors."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from test_segment import cranfield_inputs

from reranker.core import hardware
from reranker.formats.errors import FormatError
from reranker.formats.layout import PATTERNS
from reranker.formats.runs import read_run
from reranker.formats.segments import read_segments
from reranker.formats.text import meta_path
from reranker.formats.topics import read_topics_tsv
from reranker.neural import scoring, shards
from reranker.neural.models import load_classifier
from reranker.stages import score as sc
from reranker.stages import segment as seg

CANDIDATES = 10


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_model_dir) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("score-inputs")
    paths = cranfield_inputs(directory)
    paths["segments"] = directory / "sentences.jsonl"
    seg.segment(paths["docs"], paths["run"], paths["topics"], paths["segments"], unit="sentences",
                candidates=CANDIDATES, tokenizer=str(tiny_model_dir), max_length=128)
    return paths


@pytest.fixture(scope="module")
def pairs(inputs) -> list[scoring.UnitPair]:
    return scoring.make_pairs(read_run(inputs["run"]), read_topics_tsv(inputs["topics"]),
                         read_segments(inputs["segments"]), CANDIDATES)


def cli_args(inputs: dict[str, Path], checkpoint: Path, out: Path, run_dir: Path, *extra: str,
             batch_size: int = 64) -> list[str]:
    """The score CLI's arguments; its settings come from a config layered over the default."""
    layer = {"run_dir": str(run_dir), "checkpoints": {"tiny": {"source": "hf", "model": str(checkpoint)}},
             "segment": {"candidates": CANDIDATES}, "score": {"batch_size": batch_size}}
    config = run_dir.with_name(run_dir.name + ".yaml")
    config.write_text(yaml.safe_dump(layer))
    return ["--config", str(config), "--checkpoint", "tiny", "--segments", str(inputs["segments"]),
            "--run", str(inputs["run"]), "--topics", str(inputs["topics"]), "--out", str(out), *extra]


def cache_file(run_dir: Path) -> Path:
    return run_dir / PATTERNS["score_cache"] / "scores.sqlite"


@pytest.mark.parametrize("head, kind", [("sequence_classification", "logit"), ("sequence_classification", "log_prob"),
                                        ("mean_pooling", "logit"), ("mean_pooling", "log_prob"),
                                        ("next_sentence_prediction", "logit")])
def test_batched_bucketed_scores_equal_one_pair_at_a_time(tiny_model_dir, pairs, head, kind):
    classifier = load_classifier(str(tiny_model_dir), head=head)
    scorer = scoring.Scorer(classifier, kind=kind, batch_size=16)
    assert scorer.fast_path  # the fast BERT path is the one under test
    sample = pairs[::6]
    batched = scorer.score([p.query for p in sample], [p.text for p in sample])
    index = classifier.relevant_index
    with torch.inference_mode():
        for pair, value in zip(sample, batched):
            encoded = classifier.tokenizer(pair.query, pair.text, return_tensors="pt")
            logits = classifier.model(**encoded).logits[0]
            expected = logits[index] if kind == "logit" else torch.log_softmax(logits, dim=0)[index]
            assert abs(float(expected) - float(value)) < 1e-5
    assert len({len(classifier.tokenizer(p.query, p.text)["input_ids"]) for p in sample}) > 10  # varied lengths


def test_batches_sized_by_tokens_cover_every_pair_within_the_budget(tiny_model_dir, pairs):
    from reranker.neural.batching import length_batches

    lengths = [len(p.text) // 4 + 8 for p in pairs]
    for batch_size, batch_tokens in ((16, None), (64, 2000), (1000, 500), (8, 10**6)):
        batches = length_batches(lengths, batch_size, batch_tokens)
        assert sorted(i for rows in batches for i in rows) == list(range(len(pairs)))
        assert all(len(rows) <= batch_size for rows in batches)
        widths = [max(lengths[i] for i in rows) for rows in batches]
        assert widths == sorted(widths, reverse=True)  # longest first
        if batch_tokens is not None:
            assert all(len(rows) * w <= batch_tokens or len(rows) == 1 for rows, w in zip(batches, widths))
    assert len(length_batches(lengths, 1000, 500)) > len(length_batches(lengths, 1000, 4000))

    classifier = load_classifier(str(tiny_model_dir))
    sample = pairs[::3]
    by_pairs = scoring.Scorer(classifier, batch_size=16).score([p.query for p in sample], [p.text for p in sample])
    by_tokens = scoring.Scorer(classifier, batch_size=256, batch_tokens=1500).score([p.query for p in sample],
                                                                                [p.text for p in sample])
    assert np.abs(by_pairs - by_tokens).max() < 1e-5


def test_killed_run_resumes_to_identical_bytes(inputs, pairs, tiny_model_dir, tmp_path):
    shard_size = 32
    assert len(pairs) > 6 * shard_size  # several shards remain when the first lands
    resumed, uninterrupted = tmp_path / "resumed.tsv", tmp_path / "uninterrupted.tsv"
    args = cli_args(inputs, tiny_model_dir, resumed, tmp_path / "run-a", "--shard-size", str(shard_size), batch_size=4)
    process = subprocess.Popen([sys.executable, "-m", "reranker", "score", *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first_shard = shards.shard_dir(resumed) / "shard-00000.tsv"
    seal = first_shard.with_name(first_shard.name + ".sha256")
    deadline = time.monotonic() + 90
    # what resume trusts: the shard with its checksum (the checksum is written first, the shard renamed after it)
    while not (first_shard.exists() and seal.exists()) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert first_shard.exists() and not resumed.exists(), "the run finished or failed before it could be killed"

    assert sc.main(args) == 0
    meta = json.loads(meta_path(resumed).read_text())
    assert meta["shards_resumed"] >= 1 and meta["shards"] == len(shards.plan_shards(pairs, shard_size))
    assert not shards.shard_dir(resumed).exists()

    assert sc.main(cli_args(inputs, tiny_model_dir, uninterrupted, tmp_path / "run-b",
                            "--shard-size", str(shard_size), batch_size=4)) == 0
    assert resumed.read_bytes() == uninterrupted.read_bytes()
    rows = uninterrupted.read_text().splitlines()
    assert [tuple(r.split("\t")[:3]) for r in rows] == [(p.qid, p.doc_id, str(p.unit)) for p in pairs]


def test_next_shard_tokenised_beside_the_model_gives_the_same_bytes(pairs, tiny_model_dir, tmp_path):
    """Prefetch (a GPU's default, forced here on the CPU): the next shard's tokens come from a thread."""
    scorer = scoring.Scorer(load_classifier(str(tiny_model_dir)), batch_size=8)
    calls = []
    prepare = scorer.prepare
    scorer.prepare = lambda queries, texts: calls.append(len(queries)) or prepare(queries, texts)
    outputs = {}
    for prefetch in (False, True):
        out = tmp_path / f"prefetch-{prefetch}.tsv"
        counts = scoring.score_pairs_sharded(scorer, pairs, out, shard_size=32, prefetch=prefetch)
        outputs[prefetch] = out.read_bytes()
        assert counts["scored"] == len(pairs)
    assert outputs[True] == outputs[False]
    assert len(calls) == len(shards.plan_shards(pairs, 32))  # every shard prepared, only when prefetching


def test_shards_hold_whole_queries_near_the_shard_size(pairs):
    for size in (1, 32, 100, 250, 10**6):
        bounds = shards.plan_shards(pairs, size)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(pairs)
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        qids = [{p.qid for p in pairs[start:end]} for start, end in bounds]
        assert all(not (a & b) for i, a in enumerate(qids) for b in qids[i + 1:])  # a query never spans shards
        assert all(end - start <= size or len(q) == 1 for (start, end), q in zip(bounds, qids))
        # a shard closes only when the next query would overflow it
        assert all(end - start + sum(p.qid == pairs[end].qid for p in pairs[end:]) > size
                   for start, end in bounds[:-1])
    assert shards.plan_shards([], 10) == [(0, 0)]
    assert [len(shards.part_range(10, (i, 4))) for i in range(1, 5)] == [2, 3, 2, 3]
    assert list(shards.part_range(2, (1, 3))) == []  # more parts than shards: some parts are empty
    with pytest.raises(ValueError, match="I/N"):
        shards.parse_part("2of3")
    with pytest.raises(ValueError, match="between 1 and N"):
        shards.parse_part("4/3")


def test_parts_scored_apart_gather_to_the_unsharded_bytes(inputs, pairs, tiny_model_dir, tmp_path):
    """Scatter/gather as a cluster runs it: each part a separate job with its own cache (another node)."""
    shard_size, n_parts = 60, 2
    assert len(shards.plan_shards(pairs, shard_size)) > n_parts  # a part of several shards
    whole = tmp_path / "whole.tsv"
    assert sc.main(cli_args(inputs, tiny_model_dir, whole, tmp_path / "run-whole", "--shard-size", str(shard_size),
                            batch_size=8)) == 0
    parts = [tmp_path / f"part{i}.tsv" for i in range(1, n_parts + 1)]
    for i, part in enumerate(parts, start=1):
        assert sc.main(cli_args(inputs, tiny_model_dir, part, tmp_path / f"run-part{i}", "--shard-size",
                                str(shard_size), "--part", f"{i}/{n_parts}", batch_size=8)) == 0
    metas = [json.loads(meta_path(p).read_text()) for p in parts]
    assert sum(m["pairs"] for m in metas) == len(pairs) and all(m["pairs"] for m in metas)

    gathered = tmp_path / "gathered.tsv"
    assert sc.main(["gather", "--parts", *map(str, reversed(parts)), "--out", str(gathered)]) == 0
    assert gathered.read_bytes() == whole.read_bytes()
    meta = json.loads(meta_path(gathered).read_text())
    assert meta["pairs"] == len(pairs) and meta["parts"] == list(map(str, parts))


def test_gather_refuses_an_incomplete_or_mixed_set_of_parts(inputs, tiny_model_dir, tmp_path, capsys):
    parts = [tmp_path / f"part{i}.tsv" for i in (1, 2)]
    for i, part in enumerate(parts, start=1):
        assert sc.main(cli_args(inputs, tiny_model_dir, part, tmp_path / f"run{i}", "--shard-size", "60",
                                "--part", f"{i}/3", batch_size=8)) == 0
    out = tmp_path / "gathered.tsv"
    assert sc.main(["gather", "--parts", *map(str, parts), "--out", str(out)]) == 2
    assert "part 1/3, but 2 parts were given" in capsys.readouterr().err
    assert sc.main(["gather", "--parts", str(parts[0]), str(parts[0]), str(tmp_path / "part3.tsv"),
                    "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    other = tmp_path / "other.tsv"  # part 3 of another plan: other shard size
    assert sc.main(cli_args(inputs, tiny_model_dir, other, tmp_path / "run3", "--shard-size", "90",
                            "--part", "3/3", batch_size=8)) == 0
    assert sc.main(["gather", "--parts", *map(str, parts), str(other), "--out", str(out)]) == 2
    assert "disagree on" in capsys.readouterr().err
    assert not out.exists() and not meta_path(out).exists()
    assert sc.main(cli_args(inputs, tiny_model_dir, other, tmp_path / "run3", "--part", "0/3")) == 2
    assert "between 1 and N" in capsys.readouterr().err


def test_cache_is_reused_keyed_by_model_and_shared_by_kinds(inputs, pairs, tiny_model_dir, tmp_path):
    cache = tmp_path / "cache"
    common = dict(candidates=CANDIDATES, cache_dir=cache, batch_size=32)
    first = scoring.score_run(str(tiny_model_dir), inputs["segments"], inputs["run"], inputs["topics"],
                         tmp_path / "first.tsv", **common)
    unique = len({(p.query, p.text) for p in pairs})
    assert first["pairs"] == len(pairs) and first["scored"] == unique

    again = scoring.score_run(str(tiny_model_dir), inputs["segments"], inputs["run"], inputs["topics"],
                         tmp_path / "again.tsv", **common)
    assert again["scored"] == 0 and again["cache_hits"] == len(pairs)
    assert (tmp_path / "again.tsv").read_bytes() == (tmp_path / "first.tsv").read_bytes()

    def scores(path: Path) -> np.ndarray:
        return np.array([float(line.split("\t")[3]) for line in path.read_text().splitlines()])

    sliced = scoring.score_run(str(tiny_model_dir), inputs["segments"], inputs["run"], inputs["topics"],
                          tmp_path / "sliced.tsv", num_layers=1, **common)
    assert sliced["fingerprint"] != first["fingerprint"] and sliced["scored"] == unique
    assert np.abs(scores(tmp_path / "sliced.tsv") - scores(tmp_path / "first.tsv")).max() > 1e-3

    # The cache holds every logit: another reading of the same model scores nothing anew, and
    # reads what an uncached run computes.
    log_prob = scoring.score_run(str(tiny_model_dir), inputs["segments"], inputs["run"], inputs["topics"],
                            tmp_path / "log_prob.tsv", kind="log_prob", **common)
    assert log_prob["scored"] == 0 and log_prob["cache_hits"] == len(pairs)
    assert (scores(tmp_path / "log_prob.tsv") < 0).all()
    uncached = scoring.score_run(str(tiny_model_dir), inputs["segments"], inputs["run"], inputs["topics"],
                            tmp_path / "log_prob_uncached.tsv", kind="log_prob", candidates=CANDIDATES, batch_size=32)
    assert uncached["scored"] == unique
    assert (tmp_path / "log_prob_uncached.tsv").read_bytes() == (tmp_path / "log_prob.tsv").read_bytes()


def test_two_processes_share_one_cache(inputs, pairs, tiny_model_dir, tmp_path):
    run_dir = tmp_path / "shared-run"
    outs = [tmp_path / "one.tsv", tmp_path / "two.tsv"]
    processes = [subprocess.Popen([sys.executable, "-m", "reranker", "score",
                                   *cli_args(inputs, tiny_model_dir, out, run_dir, "--shard-size", "50")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for out in outs]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    one, two = ([float(line.split("\t")[3]) for line in out.read_text().splitlines()] for out in outs)
    assert np.allclose(one, two, rtol=0, atol=1e-6)
    with sqlite3.connect(cache_file(run_dir)) as db:
        assert db.execute("SELECT COUNT(*) FROM logits").fetchone()[0] == len({(p.query, p.text) for p in pairs})


def test_missing_checkpoint_is_a_clear_error(inputs, tmp_path, capsys):
    missing = tmp_path / "no-such-checkpoint"
    assert sc.main(cli_args(inputs, missing, tmp_path / "out.tsv", tmp_path / "cache")) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "not found" in err


def test_malformed_segments_name_the_file_and_line(inputs, tiny_model_dir, tmp_path, capsys):
    lines = inputs["segments"].read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines[:4] + ['{"doc_id": "1", "text": "no unit"}'] + lines[4:]) + "\n")
    args = cli_args(inputs, tiny_model_dir, tmp_path / "out.tsv", tmp_path / "cache")
    args[args.index("--segments") + 1] = str(broken)
    assert sc.main(args) == 2
    assert f"{broken}:5" in capsys.readouterr().err


def test_run_documents_without_segments_are_an_error(inputs):
    segments = read_segments(inputs["segments"])
    with pytest.raises(FormatError, match=r"no segments for document \S+ \(query \d+, rank 11\)"):
        scoring.make_pairs(read_run(inputs["run"]), read_topics_tsv(inputs["topics"]), segments, CANDIDATES + 1,
                      inputs["segments"])


def test_fast_precision_runs_in_bf16_or_says_why_not(tiny_model_dir):
    classifier = load_classifier(str(tiny_model_dir))
    flags = hardware.cpu_info()["flags"]
    if any(flag in flags for flag in hardware.CPU_BF16_FLAGS):
        assert scoring.Scorer(classifier, precision="fast", device="cpu").dtype == torch.bfloat16
    else:
        with pytest.raises(hardware.PrecisionNotApplicable, match="avx512_bf16"):
            scoring.Scorer(classifier, precision="fast", device="cpu")


def test_bi_encoder_scores_are_sentence_transformers_cosines(pairs):
    from sentence_transformers import SentenceTransformer

    model = "sentence-transformers/all-MiniLM-L6-v2"
    scorer = scoring.Scorer(load_classifier(model, head="bi_encoder"), kind="cosine", batch_size=16)
    sample = pairs[::7][:60]
    got = scorer.score([p.query for p in sample], [p.text for p in sample])
    reference = SentenceTransformer(model, device="cpu")
    queries = reference.encode([p.query for p in sample], normalize_embeddings=True)
    texts = reference.encode([p.text for p in sample], normalize_embeddings=True)
    assert np.abs(got - (queries * texts).sum(axis=1)).max() < 1e-5
    with pytest.raises(ValueError, match="does not fit head"):
        scoring.Scorer(load_classifier(model, head="bi_encoder"), kind="logit")
