"""Run-level reproduction: repro-eval's KTU, RBO, RMSE and paired t-test of our run against the
original's own (`python -m reranker evaluate reproduction`), on small cuts of the real original runs, and the seed
index's section made from the stored JSON."""

from __future__ import annotations

import gzip
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml

from reranker.experiments import load_config
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import read_run, sorted_docs, write_run
from reranker.report import seed_index
from reranker.reproduction import run_level as run_reproduction
from reranker.reproduction.seeds import load_seeds
from reranker.stages import evaluate, tables
from reranker.workflow.experiment import Experiment

QUERIES = 6


def cut(source: Path, out: Path, queries: int = QUERIES, depth: int | None = None) -> Path:
    """The first `queries` queries of a real run (top `depth`), as a run file."""
    run = read_run(source)
    kept = sorted(run, key=int)[:queries]
    write_run({q: dict(sorted_docs(run[q])[:depth]) for q in kept}, out, "cut")
    return out


def robust04(birch_data: Path, tmp_path: Path) -> dict[str, Path]:
    """Birch's Robust04 run, its first queries, and its judgments."""
    return {"run": cut(birch_data / "robust04-birch" / "rob04_yang19_rm3.run.gz", tmp_path / "birch.run"),
            "qrels": birch_data / "robust04-birch" / "qrels.robust2004.txt.gz"}


def reproduce(tmp_path: Path, pair: str, original: Path, run: Path, qrels: Path, config: dict | None = None) -> dict:
    """`evaluate reproduction` as the rule runs it; the JSON it wrote."""
    argv = ["reproduction", "--pair", pair, "--original", str(original), "--run", str(run), "--qrels", str(qrels),
            "--out", str(tmp_path / f"{pair}.json")]
    if config is not None:
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        argv[1:1] = ["--config", str(tmp_path / "config.yaml")]
    assert evaluate.main(argv) == 0
    return json.loads((tmp_path / f"{pair}.json").read_text())


def test_a_run_against_itself_gives_ktu_1_rbo_1_rmse_0_and_p_1(birch_data, tmp_path):
    files = robust04(birch_data, tmp_path)
    record = reproduce(tmp_path, "robust04-birch-identity", files["run"], files["run"], files["qrels"])
    numbers = record["numbers"]
    assert (numbers["KTU"], numbers["RBO"]) == (1.0, 1.0)
    assert numbers["RMSE"] == {"AP@1000": 0.0, "nDCG@20": 0.0} and numbers["p"] == {"AP@1000": 1.0, "nDCG@20": 1.0}
    assert record["topics"]["compared"] == QUERIES and set(record["per_topic"]["KTU"].values()) == {1.0}
    assert numbers["mean_original"] == numbers["mean_reproduced"]
    assert record["format_version"] == run_reproduction.FORMAT_VERSION and record["measures"] == ["AP@1000", "nDCG@20"]
    provenance = record["provenance"]
    assert provenance["versions"]["repro-eval"] and len(provenance["inputs_sha256"]) == 2  # one run, read twice


def test_a_swapped_pair_lowers_ktu_rbo_and_moves_rmse_on_its_topic_only(birch_data, tmp_path):
    files = robust04(birch_data, tmp_path)
    run = read_run(files["run"])
    qid = sorted(run, key=int)[0]
    ranked, grades = sorted_docs(run[qid]), read_qrels(files["qrels"])[qid]
    (first, s1) = ranked[0]
    # rank 1 and the first document judged otherwise change places: the order and nDCG@20 both move
    second, s2 = next((d, s) for d, s in ranked if grades.get(d, 0) != grades.get(first, 0))
    run[qid] = {**run[qid], first: s2, second: s1}
    write_run(run, tmp_path / "swapped.run", "swapped")
    record = reproduce(tmp_path, "robust04-birch-identity", files["run"], tmp_path / "swapped.run", files["qrels"])
    ktu, rbo = record["per_topic"]["KTU"], record["per_topic"]["RBO"]
    assert ktu[qid] < 1 and rbo[qid] < 1
    assert all(ktu[q] == 1.0 and rbo[q] == 1.0 for q in ktu if q != qid)
    assert record["numbers"]["KTU"] == pytest.approx(sum(ktu.values()) / len(ktu)) and record["numbers"]["KTU"] < 1
    # RMSE is repro-eval's over the per-topic values stored beside it
    for measure in record["measures"]:
        o, r = record["per_topic"]["original"][measure], record["per_topic"]["reproduced"][measure]
        expected = math.sqrt(sum((o[q] - r[q]) ** 2 for q in o) / len(o))
        assert record["numbers"]["RMSE"][measure] == pytest.approx(expected)
    assert record["numbers"]["RMSE"]["nDCG@20"] > 0


def test_both_runs_are_cut_to_the_depth_and_short_topics_are_listed(birch_data, tmp_path):
    """The thesis' run holds a top 100: ours is compared to that depth, and a topic where a run stops earlier is
    compared to the depth both reach (and listed)."""
    files = robust04(birch_data, tmp_path)
    top = cut(files["run"], tmp_path / "top5.run", depth=5)
    run = read_run(top)
    qid = sorted(run, key=int)[0]
    run[qid] = dict(sorted_docs(run[qid])[:3])
    write_run(run, tmp_path / "short.run", "short")
    config = {"reproduction": {"tiny": {"collection": "robust04", "original": "unused", "run": "provided", "depth": 5,
                                        "measures": ["nDCG@20", "AP@1000"]}}}
    record = reproduce(tmp_path, "tiny", tmp_path / "short.run", files["run"], files["qrels"], config)
    assert record["numbers"]["KTU"] == 1.0 and record["numbers"]["RBO"] == 1.0  # ours, cut to 5, is the original
    assert record["topics"]["short"] == {qid: 3} and record["depth"] == 5 and record["measures"][0] == "nDCG@20"
    cut5 = evaluate.evaluate(run_reproduction.top(read_run(files["run"]), 5), read_qrels(files["qrels"]), ["nDCG@20"])
    assert record["per_topic"]["reproduced"]["nDCG@20"] == cut5.per_query["nDCG@20"]  # measured as compared


def test_the_thesis_run_scores_its_published_bm25_under_the_theses_measure(birch_data, tmp_path):
    """Cranfield's per-topic measures are on our judgments, grades applied: the thesis' run scores 0.4714 under its
    own nDCG@20 (its README and notebooks) and 0.3336 on the standard one; against itself, the identity."""
    from reranker.stages import collections

    assert collections.main(["export", "--collection", "cranfield", "--out", str(tmp_path / "cranfield")]) == 0
    thesis = birch_data / "radboud-thesis" / "bm25.top100.run.gz"
    record = reproduce(tmp_path, "cranfield-thesis-bm25", thesis, thesis, tmp_path / "cranfield" / "qrels.txt")
    assert record["measures"] == ["RadboudNDCG@20", "nDCG@20"] and record["depth"] == 100
    assert round(record["numbers"]["mean_original"]["RadboudNDCG@20"], 4) == 0.4714
    assert round(record["numbers"]["mean_original"]["nDCG@20"], 4) == 0.3336
    assert record["topics"]["compared"] == 225 and record["numbers"]["KTU"] == 1.0 and record["topics"]["short"] == {}


def test_the_pairs_files_are_the_rules_inputs():
    experiment = Experiment(load_config())
    thesis = experiment.reproduction_inputs("cranfield-thesis-bm25")
    assert thesis["original"].endswith("radboud-thesis/bm25.top100.run.gz")
    assert thesis["run"] == experiment.layout.path("trec_run", collection="cranfield", run="bm25")
    assert thesis["qrels"] == experiment.layout.path("qrels", collection="cranfield")  # grades applied
    birch = experiment.reproduction_inputs("robust04-birch-identity")
    robust = experiment.config["collections"]["robust04"]
    assert birch == {"original": robust["run"], "run": robust["run"], "qrels": robust["qrels"]}


def test_the_quick_profile_has_the_same_pairs_and_the_inputs_it_makes():
    from reranker.core.config import CONFIG_DIR

    config = load_config([CONFIG_DIR / "quick.yaml"])
    assert set(config["reproduction"]) == {"cranfield-thesis-bm25", "robust04-birch-identity"}
    assert "cranfield" in config["baselines"]["collections"] and "robust04" in config["baselines"]["provided_runs"]


def test_the_index_shows_each_pair_from_its_stored_json(birch_data, tmp_path):
    files = robust04(birch_data, tmp_path)
    run_dir = tmp_path / "run"
    folder = run_dir / "numbers" / "reproduction"
    folder.mkdir(parents=True)
    reproduce(tmp_path, "robust04-birch-identity", files["run"], files["run"], files["qrels"])
    shutil.copy(tmp_path / "robust04-birch-identity.json", folder / "robust04-birch-identity.json")
    seeds = tmp_path / "seeds.yaml"
    seeds.write_text(yaml.safe_dump({"works": [{"title": "W", "tables": [{"source": "T", "table": "main", "effect": "e"}]}]}))
    out = tmp_path / "README.md"
    assert tables.main(["index", "--run-dir", str(run_dir), "--seeds", str(seeds), "--out", str(out)]) == 0
    text = out.read_text()
    assert "## Runs against the originals' own runs (repro-eval)" in text
    assert ("| Robust04 BM25+RM3: Birch's run against itself (sanity line) | all | 6 | 1.0000 | 1.0000 | 0.0000 (AP@1000) "
            "| 1.0000 (AP@1000) |") in text
    assert "Also: RMSE 0.0000, p 1.0000" in text and "on nDCG@20." in text
    for name in run_reproduction.MEANINGS:
        assert f"\n- {name}: " in text
    # no pair, no section: the stored READMEs stay what they were
    shutil.rmtree(folder)
    assert "repro-eval" not in seed_index.index(load_seeds(seeds), run_dir)


def test_a_damaged_pair_file_is_named_with_the_fix(tmp_path):
    path = tmp_path / "pair.json"
    path.write_text(json.dumps({"format_version": 1, "pair": "p"}))
    with pytest.raises(run_reproduction.FormatError, match=r"pair\.json: not a run-level reproduction: it lacks label"):
        run_reproduction.read_record(path)
    path.write_bytes(gzip.compress(b"{}"))
    with pytest.raises(run_reproduction.FormatError, match="not valid JSON"):
        run_reproduction.read_record(path)


def test_stored_pairs_name_what_made_them():
    """A stored pair (results/**/numbers/reproduction/, promoted with its run) reads, and names its command, a clean
    commit, repro-eval's version and its inputs as every machine names them (as tests/test_provenance.py asks of
    numbers/*.json, which does not look into this folder)."""
    results = Path(__file__).resolve().parent.parent / "results"
    for path in sorted(results.glob("**/numbers/reproduction/*.json")):
        provenance = run_reproduction.read_record(path)["provenance"]
        assert provenance["command"] and provenance["git_dirty"] is False and len(provenance["git_commit"]) == 40, path
        assert provenance["versions"].get("repro-eval") and provenance["inputs_sha256"], path
        assert not any(Path(name).is_absolute() for name in provenance["inputs_sha256"]), path
