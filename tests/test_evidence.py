"""Birch's evidence (reranker/ranking/evidence.py, formats/evidence.py, explain): real segments of a tiny collection,
hand-set unit scores, fuse birch with and without the evidence, then explain, diff and the report's page."""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

import pytest

from reranker.formats.docs import read_docs
from reranker.formats.errors import FormatError, InputError
from reranker.formats.evidence import document_text, evidence_path, read_evidence, total, unit_offsets
from reranker.formats.runs import read_run, sorted_docs, top_k_docs
from reranker.formats.unit_scores import read_unit_scores_with_units, write_unit_scores
from reranker.ranking.evidence import evidence_diff, largest_moves, overlap
from reranker.stages import explain, fuse
from reranker.stages.segment import segment

# Titles and bodies with what segment cleans: markup, entities, hard wraps, a body that repeats its title.
DOCS = [
    {"id": "d1", "title": "Wings", "text": "Flow over a wing.\nLift and   drag. Stall at a <b>high</b> angle."},
    {"id": "d2", "title": "Heat", "text": "Heat moves. It moves fast &amp; far. Gases convect."},
    {"id": "d3", "title": "Heat transfer", "text": "Heat transfer in gases. Convection. Radiation too."},
    {"id": "d4", "title": "", "text": "A wing stalls. Drag rises."},
    {"id": "d5", "title": "Notes", "text": "Nothing here."},
]
QUERIES = {"1": "flow over a wing", "2": "heat transfer", "3": "wing stall", "4": "gases"}
FOLDS = {"a": ["1", "2"], "b": ["3", "4"]}
QRELS = [("1", "d3", 1), ("2", "d3", 1), ("3", "d2", 1), ("4", "d1", 1)]  # the best sentences: fusion moves them up


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """docs, topics, a first-stage run (every document, each query), its sentences by segment, unit scores
    (a function of query, document and unit: the last unit of d1 scores highest), qrels and folds."""
    folder = tmp_path_factory.mktemp("evidence")
    paths = {name: folder / name for name in ("docs.jsonl", "topics.tsv", "run.txt", "segments.jsonl", "scores.tsv",
                                              "qrels.txt", "folds.json")}
    paths["docs.jsonl"].write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    paths["topics.tsv"].write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    with open(paths["run.txt"], "w") as f:
        for q in QUERIES:
            scores = {d["id"]: round(10 - i - 0.5 * int(q) * (i % 2), 2) for i, d in enumerate(DOCS)}
            f.writelines(f"{q} Q0 {d} {r} {s} bm25\n" for r, (d, s) in enumerate(sorted_docs(scores), start=1))
    segment(paths["docs.jsonl"], paths["run.txt"], paths["topics.tsv"], paths["segments.jsonl"], candidates=4)
    units = [json.loads(line) for line in paths["segments.jsonl"].read_text().splitlines()]
    top = top_k_docs(read_run(paths["run.txt"]), 4)
    rows = [(q, u["doc_id"], u["unit"], round(((int(q) * 7 + u["unit"] * 3 + int(u["doc_id"][1:])) % 11) / 10 - 0.5, 2))
            for q in QUERIES for u in units if u["doc_id"] in top[q]]
    write_unit_scores(rows, paths["scores.tsv"])
    paths["qrels.txt"].write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in QRELS))
    paths["folds.json"].write_text(json.dumps(FOLDS))
    return paths


def fuse_birch(corpus: dict[str, Path], out: Path, top_n: int = 3, evidence: bool = True, config: str = "") -> Path:
    argv = ["birch", "--section", "birch", "--run", str(corpus["run.txt"]), "--scores", str(corpus["scores.tsv"]), "--qrels",
            str(corpus["qrels.txt"]), "--folds", str(corpus["folds.json"]), "--top-n", str(top_n),
            "--out", str(out), "--params-out", str(out.with_suffix(".json"))]
    if evidence:
        argv += ["--segments", str(corpus["segments.jsonl"]), "--docs", str(corpus["docs.jsonl"]),
                 "--evidence-out", str(evidence_path(out))]
    if config:
        (out.parent / "config.yaml").write_text(config)
        argv += ["--config", str(out.parent / "config.yaml")]
    assert fuse.main(argv) == 0
    return out


def run_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


def test_the_evidence_leaves_the_fused_run_and_its_parameters_as_they_were(corpus, tmp_path):
    plain = fuse_birch(corpus, tmp_path / "plain" / "birch.run", evidence=False)
    kept = fuse_birch(corpus, tmp_path / "kept" / "birch.run")
    # the run lines; the ir_metadata header (comments, with the stage's timings) differs run to run
    assert run_lines(kept) == run_lines(plain) and run_lines(kept)
    assert kept.with_suffix(".json").read_text() == plain.with_suffix(".json").read_text()
    assert not evidence_path(plain).exists() and evidence_path(kept).exists()
    with gzip.open(evidence_path(kept), "rb") as f:  # the same bytes for the same input: no name, no time
        assert f.read()
    again = fuse_birch(corpus, tmp_path / "again" / "birch.run")
    assert evidence_path(again).read_bytes() == evidence_path(kept).read_bytes()


@pytest.mark.parametrize("top_n, config", [(3, ""), (1, ""), (3, "birch: {fusion: {normalise: minmax, short_docs: repeat_min}}\n")])
def test_every_fused_score_is_its_contributions_and_every_sentence_is_where_the_offsets_say(corpus, tmp_path, top_n, config):
    run = fuse_birch(corpus, tmp_path / "birch.run", top_n, config=config)
    header, records = read_evidence(evidence_path(run))
    records = list(records)
    fused, first = read_run(run), read_run(corpus["run.txt"])
    scores, ids = read_unit_scores_with_units(corpus["scores.tsv"])
    docs = read_docs(corpus["docs.jsonl"], {d["id"] for d in DOCS})
    assert header["format_version"] == 1 and header["top_n"] == top_n and set(header["folds"]) == set(FOLDS)
    assert [(r["qid"], r["doc_id"]) for r in records] == [(q, d) for q in fused for d, _ in sorted_docs(fused[q])[:4]]
    for r in records:
        q, d = r["qid"], r["doc_id"]
        assert total(r) == r["fused"]["score"] and f"{r['fused']['score']:.9g}" == f"{fused[q][d]:.9g}"
        assert r["first_stage"]["score"] == first[q][d] == r["doc"]["score"]
        assert r["fused"]["rank"] == [x for x, _ in sorted_docs(fused[q])].index(d) + 1
        assert r["doc"]["weight"] == header["folds"][r["fold"]]["a"] and q in FOLDS[r["fold"]]
        text = document_text(*docs[d])
        named = [s for s in r["sentences"] if not s.get("filled")]
        assert [s["score"] for s in named] == sorted(scores[q][d], reverse=True)[:top_n]
        for s in r["sentences"]:
            assert text[s["start"]:s["end"]] == s["text"] and s["score"] == scores[q][d][ids[q][d].index(s["unit"])]
            if header["folds"][r["fold"]]["normalise"] == "none":
                assert s["value"] == s["score"]
        assert [s["weight"] for s in r["sentences"]][:1] in ([], [1.0])
    if config:  # repeat_min: a document with fewer sentences than n repeats its lowest, and says so; values in [0, 1]
        assert any(s.get("filled") for r in records for s in r["sentences"])
        assert all(0 <= s["value"] <= 1 for r in records for s in r["sentences"])
        assert any(s["value"] != s["score"] for r in records for s in r["sentences"])


def test_explain_prints_a_known_documents_ranks_sentences_and_contributions(corpus, tmp_path, capsys):
    run = fuse_birch(corpus, tmp_path / "birch.run")
    capsys.readouterr()
    assert explain.main(["--run", str(run), "1", "d1"]) == 0
    out = capsys.readouterr().out
    header, records = read_evidence(evidence_path(run))
    record = next(r for r in records if (r["qid"], r["doc_id"]) == ("1", "d1"))
    # query 1's scores of d1's units 0-3 ("Wings", "Flow over a wing.", "Lift and drag.", "Stall at a high angle."):
    # (7 + 3u + 1) % 11 / 10 - 0.5: 0.3, -0.5, -0.2, 0.1; the top three in order
    assert [s["text"] for s in record["sentences"]] == ["Wings", "Stall at a high angle.", "Lift and drag."]
    first_rank = [d for d, _ in sorted_docs(read_run(corpus["run.txt"])["1"])].index("d1") + 1
    fused_rank = [d for d, _ in sorted_docs(read_run(run)["1"])].index("d1") + 1
    assert f"first stage: rank {first_rank}, score 10" in out and f"fused:       rank {fused_rank}, score" in out
    lines = out.splitlines()
    for s in record["sentences"]:
        assert f'"{s["text"]}"' in out and any(f"= {s['contribution']:.6g}" in line and f"unit {s['unit']} " in line
                                              for line in lines)
    parts = [record["doc"]["contribution"]] + [s["contribution"] for s in record["sentences"]]
    terms = f"{parts[0]:.6g}" + "".join(f" − {-p:.6g}" if p < 0 else f" + {p:.6g}" for p in parts[1:])
    assert lines[-1] == f"  S_f = {terms} = {record['fused']['score']:.6g}"


def test_explain_below_the_rescored_documents_and_a_stale_evidence(corpus, tmp_path, capsys):
    run = fuse_birch(corpus, tmp_path / "birch.run")
    assert explain.main(["--run", str(run), "2", "d4"]) == 0  # rank 5, below the top 4
    assert "rank 5 after fusion, below the documents birch-3S re-scored" in capsys.readouterr().out
    other = tmp_path / "other.run"  # the same run with its first score raised
    lines = run_lines(run)
    qid, _, doc, rank, score, tag = lines[0].split()
    other.write_text("\n".join([f"{qid} Q0 {doc} {rank} {float(score) + 1:.9g} {tag}"] + lines[1:]) + "\n")
    evidence_path(other).write_bytes(evidence_path(run).read_bytes())
    assert explain.main(["--run", str(other), qid, doc]) == 2
    assert "the evidence is of another fusion" in capsys.readouterr().err
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"format": "birch-evidence", "format_version": 2}) + "\n")
    with pytest.raises(FormatError, match=r"newer\.jsonl:1: format_version 2, this code reads 1"):
        read_evidence(newer)


def test_offsets_of_a_unit_not_in_the_text_are_null():
    assert unit_offsets("a b a", ["a", "zzz", "a", ""]) == [(0, 1), None, (4, 5), (5, 5)]


def test_diff_of_a_rerun_and_of_fewer_sentences(corpus, tmp_path, capsys):
    three = fuse_birch(corpus, tmp_path / "three" / "birch.run")
    rerun = fuse_birch(corpus, tmp_path / "rerun" / "birch.run")
    one = fuse_birch(corpus, tmp_path / "one" / "birch.run", top_n=1)
    capsys.readouterr()
    assert explain.main(["diff", str(three), str(rerun), "--out", str(tmp_path / "diff.json")]) == 0
    same = json.loads((tmp_path / "diff.json").read_text())
    assert same["mean_overlap"] == 1 and same["identical"] == same["documents"] == 16 and same["disjoint"] == 0
    assert "mean overlap of the top sentences 1.0000" in capsys.readouterr().out
    a, b = (list(read_evidence(evidence_path(r))[1]) for r in (three, one))
    diff = evidence_diff(a, b)
    # 1S names each document's best sentence, which 3S names too: 1 of the larger set's 3 (of 2 for d4, d5)
    assert diff["documents"] == 16 and diff["disjoint"] == 0
    by_key = {(r["qid"], r["doc_id"]): r for r in b}
    expected = [overlap(r, by_key[r["qid"], r["doc_id"]]) for r in a]
    assert diff["mean_overlap"] == pytest.approx(sum(expected) / len(expected))
    assert {round(v, 4) for v in expected} <= {0.3333, 0.5, 1.0}


def test_the_reports_page_shows_the_largest_moves_with_their_sentences(corpus, tmp_path):
    run = fuse_birch(corpus, tmp_path / "birch.run")
    page = tmp_path / "moves.html"
    assert explain.main(["moves", "--run", f"toy:{run}", "--topics", f"toy:{corpus['topics.tsv']}", "--count", "2",
                         "--out", str(page)]) == 0
    html = page.read_text()
    ups, downs = largest_moves(read_evidence(evidence_path(run))[1], 2)
    assert ups or downs
    for r in ups + downs:
        assert f"document <b>{r['doc_id']}</b>: rank {r['first_stage']['rank']} → {r['fused']['rank']}" in html
        assert all(re.sub("&", "&amp;", s["text"]) in html for s in r["sentences"])
    assert "“flow over a wing”" in html or "“heat transfer”" in html or "“wing stall”" in html or "“gases”" in html


def test_evidence_needs_segments_and_docs(corpus, tmp_path):
    with pytest.raises(InputError, match="--evidence-out needs --segments and --docs"):
        fuse.evidence_inputs(argparse.Namespace(evidence_out="x.gz", segments="s", docs=None))
