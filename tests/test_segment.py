"""Segmentation of real Cranfield documents: sentences (pysbd), token windows, word passages."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

from reranker.formats.errors import FormatError, InputError
from reranker.formats.runs import read_run, sorted_docs, top_k_docs, write_run
from reranker.formats.segments import windows
from reranker.formats.text import meta_path
from reranker.formats.topics import write_topics_tsv
from reranker.stages import segment as seg

QUERIES = 3
DEPTH = 20


def cranfield_inputs(directory: Path, queries: int = QUERIES, depth: int = DEPTH) -> dict[str, Path]:
    """docs.jsonl, topics.tsv and a word-overlap run of the first Cranfield queries, as the stages write them."""
    import ir_datasets

    dataset = ir_datasets.load("cranfield")
    docs = list(dataset.docs_iter())
    topics = {q.query_id: " ".join(q.text.split()) for q in list(dataset.queries_iter())[:queries]}
    paths = {name: directory / name for name in ("docs.jsonl", "topics.tsv", "run.txt")}
    with open(paths["docs.jsonl"], "w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps({"id": doc.doc_id, "title": doc.title, "text": doc.text}) + "\n")
    write_topics_tsv(topics, paths["topics.tsv"])
    doc_words = {doc.doc_id: set(doc.text.split()) for doc in docs}
    run = {qid: {doc_id: float(len({w for w in text.split() if len(w) > 3} & words))
                 for doc_id, words in doc_words.items()} for qid, text in topics.items()}
    write_run(run, paths["run.txt"], tag="overlap", depth=depth)
    return {"docs": paths["docs.jsonl"], "topics": paths["topics.tsv"], "run": paths["run.txt"]}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    return cranfield_inputs(tmp_path_factory.mktemp("cranfield"))


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def read_units(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sentences_are_deterministic_sorted_and_described(inputs, tiny_model_dir, tmp_path):
    import pysbd

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (first, second):
        seg.segment(inputs["docs"], inputs["run"], inputs["topics"], out, unit="sentences", candidates=10,
                    tokenizer=str(tiny_model_dir), max_length=128)
    assert first.read_bytes() == second.read_bytes()
    units = read_units(first)
    expected_docs = {doc for docs in top_k_docs(read_run(inputs["run"]), 10).values() for doc in docs}
    assert {u["doc_id"] for u in units} == expected_docs
    keys = [(u["doc_id"], u["unit"]) for u in units]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(u["text"] for u in units)
    assert len(units) > 3 * len(expected_docs)  # split into sentences, not kept whole

    meta = json.loads(meta_path(first).read_text())
    assert meta["splitter"] == {"name": "pysbd", "version": pysbd.__version__, "language": "en", "window": 20_000}
    assert meta["candidates"] == 10 and meta["max_length"] == 128 and meta["units"] == len(units)
    assert meta["tokenizer"] == str(tiny_model_dir)
    assert {name: entry["sha256"] for name, entry in meta["inputs"].items()} == {
        name: sha256(inputs[name]) for name in ("docs", "run", "topics")}


def test_long_sentences_are_cut_into_windows_within_the_budget(inputs, tiny_model_dir, tokenizer, tmp_path):
    out = tmp_path / "windows.jsonl"
    meta = seg.segment(inputs["docs"], inputs["run"], inputs["topics"], out, unit="sentences", candidates=5,
                       tokenizer=str(tiny_model_dir), max_length=48)
    topics = [line.split("\t", 1)[1] for line in inputs["topics"].read_text().splitlines()]
    longest = max(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in topics)
    assert meta["token_budget"] == 48 - longest - 3

    units = read_units(out)
    lengths = [len(tokenizer(u["text"], add_special_tokens=False)["input_ids"]) for u in units]
    assert max(lengths) <= meta["token_budget"]
    assert max(lengths) > meta["token_budget"] // 2  # windows are filled, not cut word by word
    # No word is lost: a document's units hold its title and body words, in order (only
    # punctuation-only pieces are dropped, and pysbd may split a token such as "..").
    docs = {json.loads(line)["id"]: json.loads(line) for line in inputs["docs"].read_text().splitlines()}
    for doc_id in {u["doc_id"] for u in units}:
        title, body = seg.title_and_body(docs[doc_id]["title"], docs[doc_id]["text"])
        kept = "".join(u["text"] for u in units if u["doc_id"] == doc_id)
        assert re.findall(r"\w", kept) == re.findall(r"\w", title + body)


def test_windows_cut_by_words_and_split_an_overlong_word(tokenizer):
    text = "the boundary layer " * 20 + "x" * 200 + " end"
    pieces = windows(text, tokenizer, budget=10)
    assert all(seg.count_tokens(tokenizer, p) <= 10 for p in pieces)
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")
    assert windows("short sentence .", tokenizer, budget=10) == ["short sentence ."]


def test_passages_overlap_and_carry_the_title(inputs, tmp_path):
    out, bare = tmp_path / "passages.jsonl", tmp_path / "bare.jsonl"
    common = dict(unit="passages", candidates=5, passage_length=20, passage_stride=15)
    meta = seg.segment(inputs["docs"], inputs["run"], inputs["topics"], out, **common)
    seg.segment(inputs["docs"], inputs["run"], inputs["topics"], bare, passage_title=False, **common)
    assert meta["passages"] == {"length": 20, "stride": 15, "title": True}
    docs = {json.loads(line)["id"]: json.loads(line) for line in inputs["docs"].read_text().splitlines()}
    units, bare_units = read_units(out), read_units(bare)
    assert [(u["doc_id"], u["unit"]) for u in units] == [(u["doc_id"], u["unit"]) for u in bare_units]
    for doc_id in {u["doc_id"] for u in units}:
        title, body = seg.title_and_body(docs[doc_id]["title"], docs[doc_id]["text"])
        passages = [u["text"].split() for u in bare_units if u["doc_id"] == doc_id]
        assert all(len(p) <= 20 for p in passages)
        for before, after in zip(passages, passages[1:]):
            assert before[15:] == after[:5]  # 20 - 15 = 5 words of overlap
        assert passages[-1][-1] == body.split()[-1]
        titled = [u["text"] for u in units if u["doc_id"] == doc_id]
        assert all(t == f"{title} {' '.join(p)}" for t, p in zip(titled, passages))


def test_documents_are_one_unit_each_and_an_unknown_unit_is_refused(inputs, tmp_path):
    out = tmp_path / "documents.jsonl"
    meta = seg.segment(inputs["docs"], inputs["run"], inputs["topics"], out, unit="documents", candidates=5)
    docs = {json.loads(line)["id"]: json.loads(line) for line in inputs["docs"].read_text().splitlines()}
    units = read_units(out)
    assert meta["units"] == meta["documents"] == len(units) and {u["unit"] for u in units} == {0}
    for u in units:
        title, body = seg.title_and_body(docs[u["doc_id"]]["title"], docs[u["doc_id"]]["text"])
        assert u["text"] == f"{title} {body}".strip()
    assert "passages" not in meta and "token_budget" not in meta  # each unit records only its own settings
    with pytest.raises(InputError, match="unit must be one of sentences, passages, documents, not 'pages'"):
        seg.segment(inputs["docs"], inputs["run"], inputs["topics"], tmp_path / "x.jsonl", unit="pages")


def test_cli_writes_units_and_names_bad_lines(inputs, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "cli.jsonl"
    layer = tmp_path / "layer.yaml"  # settings (K, and the tokenizer that sets the token budget) from a config layer
    layer.write_text(yaml.safe_dump({"segment": {"candidates": 3, "tokenizer": str(tiny_model_dir)}}))
    args = ["--docs", str(inputs["docs"]), "--run", str(inputs["run"]), "--topics", str(inputs["topics"]),
            "--config", str(layer), "--out", str(out)]
    assert seg.main(args) == 0
    top3 = {doc for docs in top_k_docs(read_run(inputs["run"]), 3).values() for doc in docs}
    assert {u["doc_id"] for u in read_units(out)} == top3

    broken = tmp_path / "broken.jsonl"
    lines = inputs["docs"].read_text().splitlines()
    broken.write_text("\n".join(lines[:2] + ['{"title": "no id"}'] + lines[2:]) + "\n")
    args[1] = str(broken)
    assert seg.main(args) == 2  # an input error (tests/bad_inputs)
    assert f"{broken}:3" in capsys.readouterr().err


def test_run_documents_missing_from_the_docs_file_are_an_error(inputs, tmp_path):
    run = read_run(inputs["run"])
    top_doc = sorted_docs(run[next(iter(run))])[0][0]
    partial = tmp_path / "partial.jsonl"
    partial.write_text("".join(line + "\n" for line in inputs["docs"].read_text().splitlines()
                               if json.loads(line)["id"] != top_doc))
    with pytest.raises(FormatError, match=f"not in the docs file.*'{top_doc}'"):
        seg.segment(partial, inputs["run"], inputs["topics"], tmp_path / "x.jsonl", unit="passages", candidates=3)


def test_punctuation_only_pieces_are_not_sentences():
    # Cranfield writes " ." between sentences; pysbd returns such dots as sentences of their own.
    splitter = seg.SentenceSplitter()
    assert splitter.split("the flow separates .  . the wing stalls .") == ["the flow separates .", "the wing stalls ."]


def test_a_query_longer_than_half_the_pair_is_truncated_never_the_unit(tokenizer, tiny_model_dir):
    # CISI has queries of ~380 tokens: units get half the pair, and the scorer's longest_first
    # truncation then cuts only the query.
    from reranker.neural import models
    from reranker.neural.scoring import Scorer

    long_query = " ".join(["boundary layer transition on a swept wing"] * 40)
    budget = seg.token_budget(tokenizer, [long_query, "short query"], max_length=64)
    assert budget == (64 - 3) // 2
    unit = windows(" ".join(["shock wave interaction"] * 40), tokenizer, budget)[0]
    assert seg.count_tokens(tokenizer, unit) <= budget
    scorer = Scorer(models.load_classifier(str(tiny_model_dir)), max_length=64)
    ids, types = scorer.tokenize([long_query], [unit])
    text_ids = [i for i, t in zip(ids[0], types[0]) if t == 1][:-1]  # drop the final [SEP]
    assert len(ids[0]) == 64 and text_ids == tokenizer(unit, add_special_tokens=False)["input_ids"]
    assert seg.token_budget(tokenizer, ["short query"], max_length=64) > budget
