"""reranker.corpora and the collections stage on the real collections (offline caches), plus small hand-made bad files."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import ir_datasets
import pytest

from reranker.core.config import ConfigError
from reranker.corpora.base import DocumentsUnavailableError
from reranker.corpora.export import collection_stats, export_collection
from reranker.corpora.load import collection_from_entry, load_collection
from reranker.experiments import load_config
from reranker.formats.docs import strip_markup
from reranker.formats.errors import FormatError
from reranker.formats.folds import load_folds, read_folds, seeded_folds, write_folds
from reranker.formats.qrels import read_qrels
from reranker.formats.topics import read_topics_tsv
from reranker.stages.collections import main

# Counts from ../shared/README.md (the data's provenance notes), not from this code.
EXPECTED = {
    "cranfield": {"docs": 1400, "queries": 225, "qrels": 1837},
    "vaswani": {"docs": 11429, "queries": 93, "qrels": 2083},
    "beir/scifact/test": {"docs": 5183, "queries": 300, "qrels": 339},
    "beir/scifact/train": {"docs": 5183, "queries": 809, "qrels": 919},
    "cisi": {"docs": 1460, "queries": 112, "judged_queries": 76},
    "cacm": {"docs": 3204, "queries": 64, "judged_queries": 52},
}


@pytest.fixture(scope="module")
def config(birch_data):
    return load_config()


@pytest.mark.parametrize("collection_id", sorted(EXPECTED))
def test_counts_and_ids(config, collection_id):
    collection = load_collection(collection_id, config)
    stats = collection_stats(collection)
    for key, value in EXPECTED[collection_id].items():
        assert stats[key] == value, key

    doc_ids = [doc.doc_id for doc in collection.docs_iter()]
    assert len(set(doc_ids)) == len(doc_ids)
    queries, qrels = collection.queries(), collection.qrels()
    # Ids normalised alike in docs, queries and qrels (CACM's qrels say `01` for `.I 1`).
    assert set(qrels) <= set(queries)
    assert {doc_id for judged in qrels.values() for doc_id in judged} <= set(doc_ids)
    assert all(text.strip() for text in queries.values())
    assert 0 < stats["mean_relevant_per_query"] and 0 < stats["mean_doc_length_words"]


def test_smart_fields(config):
    doc = next(load_collection("cisi", config).docs_iter())
    assert doc.doc_id == "1"
    assert doc.title == "18 Editions of the Dewey Decimal Classifications"
    assert doc.text.startswith("The present study is a history of the DEWEY Decimal Classification.")
    assert "Comaromi" not in doc.text  # .A is not text


def test_cranfield_title_not_repeated_in_text(config):
    import ir_datasets

    raw = {record.doc_id: record for record in ir_datasets.load("cranfield").docs_iter()}
    docs = {doc.doc_id: doc for doc in load_collection("cranfield", config).docs_iter()}
    assert docs["1"].text.startswith("an experimental study of a wing in a propeller slipstream")
    for doc_id, record in raw.items():
        if record.text.startswith(record.title):
            assert docs[doc_id].text == " ".join(record.text[len(record.title):].split())
    # The two documents whose repeated title has a typo.
    assert docs["1000"].text.startswith("tests were made of a short blunt-nosed")
    assert docs["1369"].text.startswith("the formula of stokes for the resistance")


@pytest.mark.parametrize("collection_id", ["cranfield-titles", "cisi-titles", "cacm-titles"])
def test_titles_are_queries_of_their_own_bodies_and_read_no_judgment(config, collection_id, tmp_path):
    """Weak supervision from documents alone: each title a query, its body the one relevant document,
    the body never holding the title; CACM's title-only records are left out."""
    parent = load_collection(collection_id.removesuffix("-titles"), config)
    titles = load_collection(collection_id, config)
    titles.parent._read_qrels = lambda: pytest.fail("a titles collection read its parent's judgments")
    titles.parent._read_queries = lambda: pytest.fail("a titles collection read its parent's queries")
    originals = {doc.doc_id: doc for doc in parent.docs_iter()}
    queries, qrels, docs = titles.queries(), titles.qrels(), {doc.doc_id: doc for doc in titles.docs_iter()}
    assert len(queries) > 1000 and set(queries) == set(qrels) == set(docs)
    assert all(judged == {qid: 1} for qid, judged in qrels.items())
    for doc_id, doc in docs.items():
        assert doc.title == "" and doc.text == originals[doc_id].text and len(doc.text.split()) >= 20
        assert " ".join(originals[doc_id].title.split()).startswith(queries[doc_id])
    left_out = set(originals) - set(docs)
    assert all(len(originals[d].text.split()) < 20 or len(originals[d].title.split()) < 3 for d in left_out)
    if collection_id == "cacm-titles":
        assert len(left_out) > 1500  # title-only records
    # Exported like any collection.
    stats = export_collection(titles, tmp_path)
    assert stats["queries"] == len(queries) and (tmp_path / "qrels.txt").read_text().count("\n") == len(queries)


def test_a_titles_collection_needs_its_parent(config):
    with pytest.raises(ConfigError, match="names itself"):
        load_collection("loop", {**config, "collections": {**config["collections"], "loop": {"source": "titles", "of": "loop"}}})
    with pytest.raises(ConfigError, match="unknown collection 'nowhere'"):
        load_collection("orphan", {**config, "collections": {**config["collections"], "orphan": {"source": "titles", "of": "nowhere"}}})


def test_strip_markup():
    assert strip_markup("<P>Fish &amp; chips</P>\n<br/>  tasty&nbsp;&lt;3 <!-- note -->") == "Fish & chips tasty <3"
    assert strip_markup("if a < b and c > d then") == "if a < b and c > d then"
    assert strip_markup("<DOC>\n<TEXT lang='en'>one\n\n two</TEXT></DOC>") == "one two"


def test_unknown_id_lists_known_ids(config):
    with pytest.raises(ConfigError) as error:
        load_collection("cisii", config)
    assert "cisii" in str(error.value)
    for known in ("cisi", "cranfield", "robust04", "beir/scifact/test"):
        assert known in str(error.value)


def test_missing_file_names_file_and_place(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("BIRCH_DATA", str(empty))
    collection = load_collection("cisi")
    with pytest.raises(FileNotFoundError) as error:
        export_collection(collection, tmp_path / "out")
    message = str(error.value)
    assert str(empty / "classic" / "cisi.tar.gz") in message
    assert all(member in message for member in ("CISI.ALL", "CISI.QRY", "CISI.REL"))
    assert "BIRCH_DATA" in message and "classic/" in message
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _smart_entry(tmp_path: Path, docs: str, queries: str, qrels: str) -> dict:
    for name, text in (("docs.all", docs), ("query.text", queries), ("qrels.text", qrels)):
        (tmp_path / name).write_text(text)
    return {"id": "tiny", "source": "smart", "docs": str(tmp_path / "docs.all"),
            "queries": str(tmp_path / "query.text"), "qrels": str(tmp_path / "qrels.text")}


DOCS = ".I 1\n.T\nA title\n.W\n<b>Body</b> text\n.I 2\n.T\nOther\n"
QUERIES = ".I 1\n.W\n find the body\n.I 0\n"


def test_smart_parsing_and_malformed_lines(tmp_path):
    good = collection_from_entry(_smart_entry(tmp_path, DOCS, QUERIES, "01 1 0 0\n01 2 0 0\n"))
    assert list(good.docs_iter()) == [("1", "A title", "Body text"), ("2", "Other", "")]
    assert good.queries() == {"1": "find the body"}  # the empty trailing `.I 0` is no query
    assert good.qrels() == {"1": {"1": 1, "2": 1}}

    bad_qrels = collection_from_entry(_smart_entry(tmp_path, DOCS, QUERIES, "01 1 0 0\n\n01 x 0 0\n"))
    with pytest.raises(FormatError, match=rf"^{tmp_path / 'qrels.text'}:3: "):
        bad_qrels.qrels()
    bad_docs = collection_from_entry(_smart_entry(tmp_path, "stray\n" + DOCS, QUERIES, ""))
    with pytest.raises(FormatError, match=rf"^{tmp_path / 'docs.all'}:1: "):
        list(bad_docs.docs_iter())
    no_text = collection_from_entry(_smart_entry(tmp_path, DOCS, ".I 1\n.W\nfirst\n.I 2\n.T\nno text\n", ""))
    with pytest.raises(FormatError, match=rf"^{tmp_path / 'query.text'}:4: query 2 has no `.W` text"):
        no_text.queries()


def test_smart_archive_members(tmp_path):
    archive = tmp_path / "tiny.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("TINY.ALL", DOCS), ("TINY.QRY", QUERIES)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    collection = collection_from_entry({"id": "tiny", "source": "smart", "archive": str(archive),
                                        "docs": "TINY.ALL", "queries": "TINY.QRY", "qrels": "TINY.REL"})
    assert collection.queries() == {"1": "find the body"}
    assert [doc.doc_id for doc in collection.docs_iter()] == ["1", "2"]
    with pytest.raises(FormatError, match="tiny needs the member TINY.REL; the archive holds TINY.ALL, TINY.QRY"):
        collection.qrels()


def test_malformed_trec_qrels_override(config, tmp_path):
    bad = tmp_path / "bad.qrels"
    bad.write_text("301 0 FBIS3-10082 1\n301 0 FBIS3-10169\n")
    entry = dict(load_collection("robust04", config).entry, qrels=str(bad))
    with pytest.raises(FormatError, match=rf"^{bad}:2: "):
        collection_from_entry(entry).qrels()


def test_robust04_run_only(config, tmp_path):
    robust04 = load_collection("robust04", config)
    robust04.check_files()
    queries = robust04.queries()
    assert len(queries) == 250
    assert queries["301"] == "International Organized Crime"  # the <title>, not <desc>
    assert max(len(text.split()) for text in queries.values()) < 10
    qrels = robust04.qrels()
    assert set(qrels) <= set(queries) and len(robust04.judged_qids()) >= 249
    assert robust04.run_only and robust04.run_path is not None and robust04.run_path.exists()
    with pytest.raises(DocumentsUnavailableError, match="licensed.*run_only: false"):
        robust04.docs_iter()  # at the call, before any iteration

    stats = export_collection(robust04, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.txt", "stats.json", "topics.tsv"]
    assert "docs" not in stats and stats["queries"] == 250
    assert read_qrels(tmp_path / "qrels.txt") == qrels


def test_missing_licensed_documents_are_explained(config):
    import ir_datasets

    if (Path(ir_datasets.util.home_path()) / "disks45" / "corpus").exists():
        pytest.skip("TREC disks 4&5 are present here")
    entry = dict(load_collection("robust04", config).entry, run_only=False)
    with pytest.raises(DocumentsUnavailableError, match="cannot find the documents of disks45.*licensed"):
        next(collection_from_entry(entry).docs_iter())


def test_export_files_and_idempotence(config, tmp_path):
    cacm = load_collection("cacm", config)
    stats = export_collection(cacm, tmp_path)
    files = {name: (tmp_path / name).read_bytes() for name in ("docs.jsonl", "topics.tsv", "qrels.txt", "stats.json")}
    records = [json.loads(line) for line in files["docs.jsonl"].decode().splitlines()]
    assert len(records) == stats["docs"] == 3204
    assert set(records[0]) == {"id", "title", "text"}
    assert read_topics_tsv(tmp_path / "topics.tsv") == cacm.queries()
    assert read_qrels(tmp_path / "qrels.txt") == cacm.qrels()
    assert json.loads(files["stats.json"]) == stats == collection_stats(cacm)

    export_collection(load_collection("cacm", config), tmp_path)
    assert {name: (tmp_path / name).read_bytes() for name in files} == files
    assert not list(tmp_path.glob("*.tmp"))


def _assert_partition(folds, qids, size=None):
    tests = [set(fold) for fold in folds.values()]
    assert sum(map(len, tests)) == len(set().union(*tests)), "folds overlap"
    assert set().union(*tests) == set(qids)
    if size is not None:
        assert all(len(fold) == size for fold in tests)


def test_cranfield_folds(config):
    cranfield = load_collection("cranfield", config)
    folds = cranfield.folds()
    assert list(folds) == ["1", "2", "3", "4", "5"]
    _assert_partition(folds, cranfield.queries(), size=45)


def test_robust04_birch_folds_match_anserini(config, birch_data):
    robust04 = load_collection("robust04", config)
    folds = robust04.folds()
    assert len(folds) == 5
    _assert_partition(folds, robust04.queries(), size=50)
    anserini = load_folds({"file": str(birch_data / "robust04-birch" / "anserini_robust04-paper2-folds.json"),
                           "format": "anserini"})
    assert {name: set(qids) for name, qids in anserini.items()} == {name: set(qids) for name, qids in folds.items()}


def test_seeded_folds():
    qids = [str(q) for q in range(1, 53)]
    folds = seeded_folds(qids, k=5, seed=42)
    _assert_partition(folds, qids)
    sizes = sorted(len(fold) for fold in folds.values())
    assert sizes[-1] - sizes[0] <= 1
    assert seeded_folds(list(reversed(qids)), k=5, seed=42) == folds  # order of input does not matter
    assert seeded_folds(qids, k=5, seed=7) != folds
    with pytest.raises(ValueError):
        seeded_folds(qids[:3], k=5)


def test_folds_files(tmp_path):
    folds = seeded_folds([str(q) for q in range(20)], k=4, seed=1)
    path = tmp_path / "folds.json"
    write_folds(folds, path)
    assert read_folds(path) == folds

    path.write_text(json.dumps({"1": ["a", "b"], "2": ["b", "c"]}))
    with pytest.raises(FormatError, match=rf"^{path}: query b is a test query of folds 1 and 2"):
        read_folds(path)
    path.write_text(json.dumps({"s1": {"train_qids": ["a"], "predict": {"dev": [], "test": ["a"]}},
                                "s2": {"train_qids": ["a"], "predict": {"dev": [], "test": ["b"]}}}))
    with pytest.raises(FormatError, match="fold 1 trains on its test queries a"):
        load_folds({"file": str(path), "format": "birch"})


def test_cli(config, tmp_path, capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in listed] == list(config["collections"])

    out = tmp_path / "cacm.folds.json"
    layer = tmp_path / "four.yaml"  # settings come from a config layered over the default
    layer.write_text("seeded_folds: {k: 4}\n")
    assert main(["folds", "--config", str(layer), "--collection", "cacm", "--out", str(out)]) == 0
    folds = read_folds(out)
    assert len(folds) == 4
    _assert_partition(folds, load_collection("cacm", config).judged_qids())

    assert main(["stats", "--collection", "nope"]) == 2
    assert "known collections: " in capsys.readouterr().err


def test_concurrent_exports_share_one_docstore(tmp_path):
    """beir/scifact/train and /test share one ir_datasets docstore, built on first use. Exported at
    once from a bare mirror copy (as two Snakemake jobs do), each must see every document once."""
    mirror = os.environ.get("IR_DATASETS_MIRROR")
    if not mirror or not (Path(mirror) / "beir" / "scifact").exists():
        pytest.skip("no IR_DATASETS_MIRROR with beir/scifact")
    home = tmp_path / "ir_datasets"
    (home / "beir").mkdir(parents=True)
    shutil.copytree(Path(mirror) / "beir" / "scifact", home / "beir" / "scifact",
                    ignore=lambda d, names: [n for n in names if not n.endswith(".zip")])
    env = {**os.environ, "IR_DATASETS_HOME": str(home)}
    jobs = {split: subprocess.Popen([sys.executable, "-m", "reranker", "collections", "export",
                                     "--collection", f"beir/scifact/{split}", "--out", str(tmp_path / split)],
                                    env=env, stderr=subprocess.PIPE, text=True)
            for split in ("train", "test")}
    for split, job in jobs.items():
        assert job.wait() == 0, job.stderr.read()
        lines = (tmp_path / split / "docs.jsonl").read_text().splitlines()
        assert len(lines) == len({json.loads(line)["id"] for line in lines}) == 5183, split


def test_cranfield_grades_are_gains_that_grow_with_relevance(config):
    """cranqrel.readme: code 1 is a complete answer, 4 minimum interest; ir_datasets passes the codes
    through. Read the other way round, a complete answer would get the lowest gain."""
    raw = {(q.query_id, q.doc_id): q.relevance for q in ir_datasets.load("cranfield").qrels_iter()}
    qrels = load_collection("cranfield", config).qrels()
    gains = {(qid, doc): gain for qid, judged in qrels.items() for doc, gain in judged.items()}
    assert raw[("2", "12")] == 1 and gains[("2", "12")] == 4  # a complete answer: the top gain
    assert raw[("1", "184")] == 2 and gains[("1", "184")] == 3
    top = max(gains.values())
    assert {key for key, gain in gains.items() if gain == top} == {key for key, code in raw.items() if code == 1}
    assert all(gains[key] == 0 for key, code in raw.items() if code == -1)
    assert Counter(gains.values()) == {4: 128, 3: 387, 2: 734, 1: 363, 0: 225}


def test_a_code_outside_the_grades_mapping_stops_with_the_file(tmp_path):
    entry = _smart_entry(tmp_path, DOCS, QUERIES, "1 0 1 1\n1 0 2 7\n")
    collection = collection_from_entry({**entry, "qrels_format": "trec", "grades": {"1": 4, "-1": 0}})
    with pytest.raises(FormatError, match=r"qrels.text.*codes \[7\].*grades"):
        collection.qrels()
    mapped = collection_from_entry({**entry, "qrels_format": "trec", "grades": {"1": 4, "7": 1}})
    assert mapped.qrels() == {"1": {"1": 4, "2": 1}}


def test_an_empty_offline_ir_datasets_cache_is_one_line_naming_the_cache(tmp_path):
    """An ir_datasets collection whose cache is empty, where no download answers (a proxy on a closed port stands
    for no network, online or not): one line naming the dataset, the cache and the fix, exit 2, nothing written."""
    home, out = tmp_path / "empty-cache", tmp_path / "vaswani"
    home.mkdir()
    closed = "http://127.0.0.1:9"
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "HTTP_PROXY": closed, "HTTPS_PROXY": closed, "NO_PROXY": ""}
    done = subprocess.run([sys.executable, "-m", "reranker", "collections", "export", "--collection", "vaswani",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert last.startswith("collections: error: vaswani: ir_datasets vaswani is not in its cache") and str(home) in last, last
    assert "no download source answered (http" in last and "IR_DATASETS_MIRROR" in last, last
    assert not out.exists()
