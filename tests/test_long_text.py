"""Very long documents: the sentence splitter works window by window, in time linear in the length
(pysbd alone took hours on a 1M-word document), and documents under the window split as before."""

from __future__ import annotations

import json
import re
import time
from typing import NamedTuple

import pytest

from reranker.formats.long_text import stitched
from reranker.formats.segments import BOUND, SentenceSplitter, title_and_body
from reranker.formats.text import meta_path
from reranker.stages import segment as seg


class Span(NamedTuple):
    start: int
    end: int


def local_spans(text: str) -> list[Span]:
    """Sentences up to a period and the spaces after it: a splitter whose boundaries depend on nothing far away."""
    return [Span(*m.span()) for m in re.finditer(r"[^.]*\.(?: +|$)|[^.]+$", text)]


def pieces_of(text: str, spans) -> list[str]:
    return [text[s.start:s.end] for s in spans(text)]


def cranfield_bodies() -> list[str]:
    import ir_datasets

    return [title_and_body(d.title, d.text)[1] for d in ir_datasets.load("cranfield").docs_iter()]


def long_text(words: int) -> str:
    """Cranfield's bodies, one after another (repeated if need be), cut to `words` words."""
    bodies = " ".join(cranfield_bodies()).split()
    return " ".join((bodies * (words // len(bodies) + 1))[:words])


@pytest.mark.parametrize("bound", [250, 400, 1000])
def test_windows_tile_the_text_and_keep_a_local_splitters_boundaries(bound):
    sentences = [" ".join(["word"] * (1 + i % 17)) + "." for i in range(300)]
    text = " ".join(sentences)
    consumed = []
    pieces = list(stitched(local_spans, text, bound, consumed.append))
    assert "".join(pieces) == text  # no character lost, none twice: the pieces' offsets are the text's
    assert sum(consumed) == len(text)
    assert pieces == pieces_of(text, local_spans)


def test_a_sentence_longer_than_the_window_is_cut_at_a_space_and_a_word_inside():
    text = "a short one. " + " ".join(["long"] * 100) + ". " + "x" * 130 + " end."
    pieces = list(stitched(local_spans, text, 100))
    assert "".join(pieces) == text
    assert all(len(p) <= 101 for p in pieces)  # a window, with the space after it
    assert pieces[0] == "a short one. "
    assert len(pieces) == 8 and all(p.endswith(("long ", "long. ")) for p in pieces[1:-2])  # cut at spaces
    assert pieces[-2:] == ["x" * 100, "x" * 30 + " end."]  # a space-less run is cut inside


def test_stitching_a_million_words_takes_linear_work():
    text = " ".join(f"the flow separates near station {i} ." for i in range(200_000))  # 1M words
    given = []

    def spans(window: str) -> list[Span]:
        given.append(len(window))
        return local_spans(window)

    started = time.perf_counter()
    pieces = list(stitched(spans, text, BOUND))
    assert time.perf_counter() - started < 60  # ~2 s idle
    assert max(given) <= BOUND and sum(given) < 1.2 * len(text)
    assert len(pieces) == 200_000 and "".join(pieces) == text


def test_cranfields_long_documents_split_in_windows_as_whole():
    # Every open collection's documents are under BOUND, so they are split whole; windows reproduce the
    # whole split wherever pysbd's boundaries are local: on each of Cranfield's 58 bodies over 2,000
    # characters, windows of 2,000 give the same sentences. (pysbd's list-item rule is not local: it
    # reads "(a)" and "1)" against the text's other items, so a text of many documents can differ.)
    whole, windowed = SentenceSplitter(), SentenceSplitter(bound=2_000)
    long_bodies = [b for b in cranfield_bodies() if len(b) > 2_000]
    assert len(long_bodies) == 58
    assert all(windowed.split(b) == whole.split(b) for b in long_bodies)


def test_a_long_document_is_split_with_pysbd_in_linear_work():
    import pysbd

    text = long_text(30_000)  # ~190k characters: pysbd on the whole takes ~20 s, 4x that at twice the length
    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    given = []

    def spans(window: str):
        given.append(len(window))
        return segmenter.segment(window)

    started = time.perf_counter()
    pieces = list(stitched(spans, text, BOUND))
    assert time.perf_counter() - started < 120  # ~3 s idle
    assert max(given) <= BOUND and sum(given) < 1.2 * len(text)
    assert "".join(pieces) == text


def test_the_segment_stage_cuts_a_long_document_into_windows(tiny_model_dir, tmp_path, capsys):
    from transformers import AutoTokenizer

    body = long_text(20_000)
    docs, run, topics, out = (tmp_path / name for name in ("docs.jsonl", "run.txt", "topics.tsv", "out.jsonl"))
    docs.write_text(json.dumps({"id": "long", "title": "A long report", "text": body}) + "\n"
                    + json.dumps({"id": "short", "title": "", "text": "The wing stalls. The flow separates."}) + "\n")
    run.write_text("1 Q0 long 1 2.0 t\n1 Q0 short 2 1.0 t\n")
    topics.write_text("1\tboundary layer transition\n")
    meta = seg.segment(docs, run, topics, out, tokenizer=str(tiny_model_dir), max_length=64)
    units = [json.loads(line) for line in out.read_text().splitlines()]
    kept = "".join(u["text"] for u in units if u["doc_id"] == "long")
    assert re.findall(r"\w", kept) == re.findall(r"\w", "A long report" + body)  # every word, in order
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert max(seg.count_tokens(tok, u["text"]) for u in units) <= meta["token_budget"]
    assert [u["text"] for u in units if u["doc_id"] == "short"] == ["The wing stalls.", "The flow separates."]
    assert json.loads(meta_path(out).read_text())["splitter"]["window"] == BOUND
    assert "sentences long" in capsys.readouterr().err  # a bar of its own for a long document
