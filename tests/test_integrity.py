"""Nothing cached or resumed is served unchecked: score-cache rows and resumed shards carry
checksums and are scored again when they fail; files are checked against their `.meta.json` by the
stage that reads them. Real SQLite and files; the tiny real model on the bad-input corpus (a dozen pairs)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from reranker.formats.errors import InputError
from reranker.formats.runs import read_run
from reranker.formats.score_cache import ScoreCache
from reranker.formats.segments import read_segments
from reranker.formats.sidecar import describe
from reranker.formats.text import meta_path
from reranker.formats.topics import read_topics_tsv
from reranker.formats.unit_scores import read_unit_scores, write_unit_scores
from reranker.neural import scoring, shards
from reranker.neural.models import load_classifier
from reranker.report.run_records import resource_metas
from reranker.stages import fuse
from reranker.stages import score as sc
from reranker.stages import segment as seg

CORPUS = Path(__file__).parent / "bad_inputs" / "files"


@pytest.fixture
def corpus(tmp_path) -> Path:
    return Path(shutil.copytree(CORPUS, tmp_path / "corpus"))


@pytest.fixture(scope="module")
def scorer(tiny_model_dir) -> scoring.Scorer:
    return scoring.Scorer(load_classifier(str(tiny_model_dir)), batch_size=4, device="cpu")


@pytest.fixture(scope="module")
def pairs() -> list[scoring.UnitPair]:
    return scoring.make_pairs(read_run(CORPUS / "run.txt"), read_topics_tsv(CORPUS / "topics.tsv"),
                         read_segments(CORPUS / "segments.jsonl"), 2)


# ---------------------------------------------------------------- the score cache (a flipped byte: tests/test_faults.py)

def test_an_older_cache_without_checksums_is_migrated_by_scoring_again(tmp_path, capsys):
    """The decision for caches of the older schema: their rows cannot be checked, so each is scored again
    when asked for (and then stored with its checksum); the older version still reads and writes the table."""
    values = np.array([0.5, -0.25], dtype=np.float32)
    key, other = ScoreCache.key(["m"], "q", "t"), ScoreCache.key(["m"], "q", "u")
    path = tmp_path / "scores.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE logits (key BLOB PRIMARY KEY, logits BLOB NOT NULL) WITHOUT ROWID")
        db.execute("INSERT INTO logits VALUES (?, ?)", (key, values.tobytes()))
    cache = ScoreCache(tmp_path)
    assert cache.get([key]) == {} and cache.rejected == 1
    assert "have no checksum (written by an older version): scoring them again" in capsys.readouterr().err
    cache.put([(key, values)])
    assert np.array_equal(cache.get([key])[key], values)
    with sqlite3.connect(path) as db:  # what the older version does to the migrated table
        db.execute("INSERT OR IGNORE INTO logits (key, logits) VALUES (?, ?)", (other, values.tobytes()))
        assert db.execute("SELECT logits FROM logits WHERE key = ?", (key,)).fetchone()[0] == values.tobytes()
    assert cache.get([other]) == {} and cache.rejected == 2
    cache.close()


# ---------------------------------------------------------------- resumed shards

def test_resume_reuses_only_shards_that_match_their_checksum(tmp_path, capsys):
    files = {i: tmp_path / f"shard-{i:05d}.tsv" for i in range(4)}
    for i in range(3):
        built = files[i].with_name(files[i].name + ".built")
        write_unit_scores([(str(i), "d1", 0, 0.5), (str(i), "d2", 0, -1.25)], built)
        shards.seal_shard(built, files[i])
        assert files[i].exists() and not built.exists()
    assert shards.shards_to_score(files) == ([3], 0)
    files[1].write_text(files[1].read_text().replace("0.5", "0.9"))  # same length, one value edited
    files[2].with_name(files[2].name + ".sha256").unlink()  # killed before its checksum, or an older version's
    assert shards.shards_to_score(files) == ([1, 2, 3], 2)
    err = capsys.readouterr().err
    assert "shard-00001.tsv does not match its checksum" in err and "shard-00002.tsv has no checksum" in err


def test_a_shard_edited_before_the_resume_is_scored_again(scorer, pairs, tmp_path):
    whole = tmp_path / "whole.tsv"
    scoring.score_pairs_sharded(scorer, pairs, whole, shard_size=4)
    n_shards = len(shards.plan_shards(pairs, 4))
    assert n_shards >= 2
    out = tmp_path / "resumed.tsv"
    out.mkdir()  # the join fails once every shard is written: a run killed at its end
    (out / "x").touch()
    with pytest.raises(OSError):
        scoring.score_pairs_sharded(scorer, pairs, out, shard_size=4)
    shutil.rmtree(out)
    Path(str(out) + ".tmp").unlink(missing_ok=True)
    first = shards.shard_dir(out) / "shard-00000.tsv"
    lines = first.read_text().splitlines(keepends=True)
    fields = lines[0].split("\t")
    lines[0] = "\t".join([*fields[:3], "99\n"])  # an edited value, as in the issue
    first.write_text("".join(lines))

    counts = scoring.score_pairs_sharded(scorer, pairs, out, shard_size=4)
    assert counts["shards_rejected"] == 1 and counts["shards_resumed"] == n_shards - 1
    assert out.read_bytes() == whole.read_bytes()
    assert counts["output"] == describe(out)


# ---------------------------------------------------------------- files against their sidecars

def test_fuse_refuses_a_score_file_shorter_than_its_meta(corpus, tiny_model_dir, capsys):
    scores = corpus / "scored.tsv"
    meta = scoring.score_run(str(tiny_model_dir), corpus / "segments.jsonl", corpus / "run.txt", corpus / "topics.tsv",
                        scores, candidates=2, batch_size=4, device="cpu")
    assert meta["output"] == describe(scores) and meta["output"]["lines"] == meta["pairs"]
    argv = ["aggregate", "--method", "maxp", "--run", str(corpus / "run.txt"), "--scores", str(scores),
            "--out", str(corpus / "maxp.run")]
    assert fuse.main(argv) == 0
    (corpus / "maxp.run").unlink()
    lines = scores.read_text().splitlines(keepends=True)
    scores.write_text("".join(line for line in lines if not line.startswith("2\t")))  # query 2's scores gone
    capsys.readouterr()
    assert fuse.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fuse: error: ") and err.count("\n") == 0
    assert str(scores) in err and str(meta_path(scores)) in err and "rerun the stage that wrote them" in err
    assert not (corpus / "maxp.run").exists()


def test_score_refuses_segments_changed_after_segment_wrote_them(corpus, tiny_model_dir):
    segments = corpus / "made.jsonl"
    meta = seg.segment(corpus / "docs.jsonl", corpus / "run.txt", corpus / "topics.tsv", segments, candidates=2,
                       tokenizer=str(tiny_model_dir))
    assert meta["output"] == describe(segments) and meta["output"]["lines"] == meta["units"]
    read_segments(segments)
    segments.write_text(segments.read_text().replace("Heat", "Cold"))
    with pytest.raises(InputError, match=rf"{segments} does not match the sha256 {meta_path(segments)} records"):
        scoring.score_run(str(tiny_model_dir), segments, corpus / "run.txt", corpus / "topics.tsv", corpus / "out.tsv",
                     candidates=2, device="cpu")
    assert not (corpus / "out.tsv").exists()


def test_gather_checks_each_part_and_records_the_whole(corpus, tiny_model_dir, capsys):
    parts = [corpus / f"part{i}.tsv" for i in (1, 2)]
    for i, part in enumerate(parts, start=1):
        scoring.score_run(str(tiny_model_dir), corpus / "segments.jsonl", corpus / "run.txt", corpus / "topics.tsv", part,
                     candidates=2, batch_size=4, device="cpu", shard_size=3, part=(i, 2))
    out = corpus / "gathered.tsv"
    assert sc.main(["gather", "--parts", *map(str, parts), "--out", str(out)]) == 0
    meta = json.loads(meta_path(out).read_text())
    assert meta["output"] == describe(out) and meta["shards_rejected"] == meta["cache_rejected"] == 0
    read_unit_scores(out)
    text = parts[1].read_text()
    parts[1].write_text(text[:-2] + ("8" if text[-2] != "8" else "9") + "\n")  # one digit of the last score
    out.unlink()
    meta_path(out).unlink()
    assert sc.main(["gather", "--parts", *map(str, parts), "--out", str(out)]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the parts' progress bars
    assert last.startswith(f"score: error: {parts[1]} does not match the sha256 {meta_path(parts[1])} records")
    assert not out.exists() and not meta_path(out).exists()


def test_fold_runs_are_joined_as_cat_joins_them_checked_and_recorded(corpus, tiny_model_dir, capsys):
    """Radboud's join (workflow/rules/radboud.smk, once `cat`): each fold's checkpoint scores its test queries;
    `score join` writes the bytes `cat` wrote, refuses a fold file changed since it was scored, and gives the
    whole a sidecar for fuse to check, which the resources table does not count as a run of its own."""
    work = corpus / "work"
    folds = [work / "scores" / "c" / f"radboud-f{qid}" / "run.tsv" for qid in ("1", "2")]
    for qid, path in zip(("1", "2"), folds):
        scoring.score_run(str(tiny_model_dir), corpus / "segments.jsonl", corpus / "run.txt", corpus / "topics.tsv", path,
                     candidates=2, batch_size=4, device="cpu", queries=frozenset({qid}))
    out = work / "scores" / "c" / "radboud" / "joined.tsv"
    assert sc.main(["join", "--parts", *map(str, folds), "--out", str(out)]) == 0
    cat = subprocess.run(["cat", *map(str, folds)], capture_output=True, check=True).stdout
    assert out.read_bytes() == cat and set(read_unit_scores(out)) == {"1", "2"}
    meta = json.loads(meta_path(out).read_text())
    assert meta["output"] == describe(out) and meta["pairs"] == len(cat.splitlines()) and meta["joined"] == list(map(str, folds))
    assert set(resource_metas(work)) == {meta_path(path) for path in folds}

    text = folds[0].read_text()
    folds[0].write_text(text[:-2] + ("8" if text[-2] != "8" else "9") + "\n")  # one digit of the last score
    out.unlink()
    capsys.readouterr()
    assert sc.main(["join", "--parts", *map(str, folds), "--out", str(out)]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"score: error: {folds[0]} does not match the sha256 {meta_path(folds[0])} records")
    assert not out.exists()
